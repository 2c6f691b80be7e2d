// libFuzzer's driver, for an executable whose `main` is Swift's (SwiftPM links executables with their own entry
// point, so libFuzzer's `main` is never used). Provided by the fuzzer runtime when built with -sanitize=fuzzer.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
