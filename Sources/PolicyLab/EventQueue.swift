/// A min-priority queue of timed events for the discrete-event simulation: a binary heap ordered by time, then by
/// insertion order, so events at the same virtual time run in the order they were scheduled (deterministic).
struct EventQueue<Payload> {
    private struct Entry {
        var time: Double
        var sequence: UInt64
        var payload: Payload
        func before(_ other: Entry) -> Bool { time != other.time ? time < other.time : sequence < other.sequence }
    }

    private var heap: [Entry] = []
    private var sequence: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// The time of the earliest event, if any.
    var nextTime: Double? { heap.first?.time }

    mutating func push(_ payload: Payload, at time: Double) {
        sequence += 1
        heap.append(Entry(time: time, sequence: sequence, payload: payload))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].before(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest event.
    mutating func pop() -> (time: Double, payload: Payload)? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].before(heap[smallest]) { smallest = left }
                if right < heap.count, heap[right].before(heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return (top.time, top.payload)
    }
}
