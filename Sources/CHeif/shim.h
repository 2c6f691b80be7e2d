// The C side of VideoFeedEngine's libheif binding (HEIC and AVIF photos).
//
// libheif's API is plain C functions and enums that Swift imports as they are; this header only includes it, so the
// module has one place to grow shims into. This module is an implementation detail: it is only ever imported with
// `internal import`, by the Media module (and by tests that generate HEIF fixtures).
#ifndef VIDEOFEED_CHEIF_SHIM_H
#define VIDEOFEED_CHEIF_SHIM_H

#include <libheif/heif.h>

#endif
