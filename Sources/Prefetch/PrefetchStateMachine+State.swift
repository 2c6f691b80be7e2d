/// How the events change the state: scheduling, trimming, releasing, eviction, the slot table and buffered frames.
extension PrefetchStateMachine {
    // MARK: - State changes

    /// Queues a job for the slot if it needs one and has none (a request for an item with a job merges into it).
    mutating func schedule(_ p: Int) {
        if slots[p].job != .none {
            if needsWork(at: p) { counters.merged += 1 }
            return
        }
        guard needsWork(at: p) else { return }
        slots[p].job = .queued
        queuedJobs += 1
    }

    /// Drops what a lowered target no longer needs (the current item became a neighbour, a neighbour moved away).
    mutating func trimToTarget(_ p: Int) {
        guard let wanted = slots[p].wanted else { return }
        if let lane = slots[p].runningLane, !needsFrames(at: p) { actions.append(.stop(lane: lane)) }
        // The item on screen keeps what playback will take next, whatever its target.
        guard slots[p].index != current else { return }
        switch wanted.stage {
        case .probed: if slots[p].bufferedFrames > 0 || slots[p].hasFirstFrame { drop(p, firstToo: true) }
        case .firstFrame: if slots[p].bufferedFrames > 0 { drop(p, firstToo: false) }
        case .buffered(let seconds):
            guard slots[p].bufferedFrames > 0 else { return }
            let n: Int
            if let same = slots[p].uniformFrame {
                n = PrefetchRules.framesOverTarget(repeatElement(same.duration, count: slots[p].bufferedFrames),
                                                   target: seconds)
            } else {
                n = PrefetchRules.framesOverTarget(buffers[p].durations, target: seconds)
            }
            guard n > 0 else { return }
            for _ in 0..<n { counters.decodedBytes -= popNewestFrame(at: p).bytes }
            counters.framesDropped += n
            actions.append(.dropBuffered(index: slots[p].index, count: n))
            forgetDecoderPosition(p)
        }
    }

    /// Releases item `index`'s slot (it left the wanted set): cancels its job, drops frames and decoder. The slot
    /// goes unless its cancelled job still runs.
    mutating func release(_ index: Int) {
        guard let p = position(of: index), slots[p].wanted != nil else { return }
        slots[p].wanted = nil
        releaseReservation(p)
        switch slots[p].job {
        case .running(let lane):
            counters.cancelledWhileRunning += 1
            cancel(lane)
            if reportsEvents { events.append(.cancelled(index: index, running: true)) }
        case .queued:
            counters.cancelledBeforeStart += 1
            slots[p].job = .none
            queuedJobs -= 1
            if reportsEvents { events.append(.cancelled(index: index, running: false)) }
        case .none:
            break
        }
        drop(p, firstToo: true)
        releaseHandle(p)
        if slots[p].job == .none { remove(index) }
    }

    mutating func cancel(_ lane: Int) {
        guard lanes[lane]?.cancelled == false else { return }
        lanes[lane]!.cancelled = true
        actions.append(.cancel(lane: lane))
    }

    mutating func releaseHandle(_ p: Int) {
        guard slots[p].hasHandle else { return }
        slots[p].hasHandle = false
        releaseLoop(p)
        actions.append(.releaseHandle(index: slots[p].index))
    }

    mutating func drop(_ p: Int, firstToo: Bool) {
        let index = slots[p].index
        let count = slots[p].bufferedFrames
        if count > 0 {
            for _ in 0..<count { counters.decodedBytes -= popNewestFrame(at: p).bytes }
            counters.framesDropped += count
            actions.append(.dropBuffered(index: index, count: count))
        }
        if firstToo, slots[p].hasFirstFrame {
            counters.decodedBytes -= slots[p].firstBytes
            counters.framesDropped += 1
            slots[p].hasFirstFrame = false
            slots[p].firstBytes = 0
            if let stage = slots[p].stage, stage > .probed { slots[p].stage = .probed }
            actions.append(.dropFirst(index: index))
        }
        if count > 0 || firstToo { forgetDecoderPosition(p) }
    }

    /// Frames the slot's decoder had passed were dropped unshown: its kept decoder goes, and one its running job
    /// hands back is not kept, so the next job starts afresh and decodes the frames the slot still holds again
    /// before delivering new ones — nothing skipped, nothing twice.
    mutating func forgetDecoderPosition(_ p: Int) {
        slots[p].restart = true
        releaseHandle(p)
    }

    /// Makes room for an incoming frame by dropping frames worth less than it, in the rules' order: buffered frames
    /// (newest first) of the slots it names, then their first frames, farthest slot first, until the frame fits. A
    /// victim is starved (not refilled until the current item changes) and its running job is cancelled. (When no
    /// other slot holds a frame there is nothing to order: the rules are not asked.)
    mutating func evict(toFit bytes: Int, for p: Int, incomingIsFirst: Bool) {
        let index = slots[p].index
        var othersHold = false
        for v in slots.indices where v != p && (slots[v].bufferedFrames > 0 || slots[v].hasFirstFrame) {
            othersHold = true
            break
        }
        guard othersHold else { return }
        // The order depends only on these values; deliveries in a row usually ask the same question.
        let key = EvictionKey(index: index, incomingIsFirst: incomingIsFirst, current: current,
                              slotsVersion: slotsVersion)
        if evictionKey != key {
            let order = rules.evictionOrder(for: index, incomingIsFirst: incomingIsFirst, current: current,
                                            others: slotKeys)
            evictionBuffered = order.buffered.compactMap { position(of: $0) }
            evictionFirst = order.first.compactMap { position(of: $0) }
            evictionKey = key
        }
        for v in evictionBuffered where slots[v].bufferedFrames > 0 {
            var count = 0, freed = 0
            while !rules.fits(bytes, held: counters.decodedBytes), slots[v].bufferedFrames > 0 {
                let last = popNewestFrame(at: v)
                counters.decodedBytes -= last.bytes
                freed += last.bytes
                count += 1
            }
            guard count > 0 else { continue }
            actions.append(.dropBuffered(index: slots[v].index, count: count))
            noteEvicted(v, frames: count, bytes: freed)
        }
        for v in evictionFirst {
            guard !rules.fits(bytes, held: counters.decodedBytes), slots[v].hasFirstFrame else { continue }
            let freed = slots[v].firstBytes
            counters.decodedBytes -= freed
            slots[v].hasFirstFrame = false
            slots[v].firstBytes = 0
            slots[v].stage = .probed
            actions.append(.dropFirst(index: slots[v].index))
            noteEvicted(v, frames: 1, bytes: freed)
        }
    }

    mutating func noteEvicted(_ v: Int, frames: Int, bytes: Int) {
        counters.framesDropped += frames
        slots[v].starved = true
        forgetDecoderPosition(v)
        if let lane = slots[v].runningLane { cancel(lane) }
        if reportsEvents { events.append(.evicted(index: slots[v].index, frames: frames, bytes: bytes)) }
    }

    // MARK: - Slot table

    /// The position of item `index`'s slot, which the job on `lane` works for: remembered per lane while no slot is
    /// added or removed (deliveries come one frame at a time, so this saves a scan per frame).
    @inline(__always)
    mutating func position(of index: Int, onLane lane: Int) -> Int? {
        if let job = lanes[lane], job.index == index, job.positionVersion == slotsVersion { return job.position }
        guard let p = position(of: index) else { return nil }
        if lanes[lane]?.index == index {
            lanes[lane]!.position = p
            lanes[lane]!.positionVersion = slotsVersion
        }
        return p
    }

    /// The position of the current item's slot, remembered while no slot is added or removed.
    @inline(__always)
    mutating func currentPosition() -> Int? {
        if currentCache.version == slotsVersion && currentCache.index == current { return currentCache.position }
        guard let p = position(of: current) else { return nil }
        currentCache = (current, p, slotsVersion)
        return p
    }

    /// Where item `index`'s slot is in ``slots``, if it has one.
    @inlinable
    public func position(of index: Int) -> Int? {
        var i = 0
        while i < slotKeys.count {
            if slotKeys[i] == index { return i }
            i += 1
        }
        return nil
    }

    // MARK: - Buffered frames

    /// Seconds of `count` frames like the uniform frame of the slot at `p`, summed one at a time: a buffer of equal
    /// frames is only a count, and its seconds come from a table kept per frame duration, as many sums as the budget
    /// can hold frames of that size (at most 65,536; beyond, summed on demand). The slot remembers where its table is.
    @inline(__always)
    func uniformSeconds(_ count: Int, at p: Int) -> Double {
        if count < slots[p].sumsLimit { return sumValues[slots[p].sumsStart + count] }
        return uniformSecondsBeyond(count, at: p)
    }

    @inline(never)
    func uniformSecondsBeyond(_ count: Int, at p: Int) -> Double {
        let duration = slots[p].uniformFrame!.duration
        var sum = sumValues[slots[p].sumsStart + slots[p].sumsLimit - 1]
        for _ in slots[p].sumsLimit - 1 ..< count { sum += duration }
        return sum
    }

    /// Points the slot at `p` at the sums table of `frame`'s duration (made on first use).
    @inline(never)
    mutating func useSumsTable(of frame: BufferedFrame, at p: Int) {
        var t = 0
        while t < sumDurations.count, sumDurations[t] != frame.duration { t += 1 }
        if t == sumDurations.count {
            let limit = max(min(rules.budget / max(frame.bytes, 1), 1 << 16) + 1, 2)
            sumDurations.append(frame.duration)
            sumStarts.append(sumValues.count)
            sumLimits.append(limit)
            var sum = 0.0
            sumValues.append(sum)
            for _ in 1..<limit {
                sum += frame.duration
                sumValues.append(sum)
            }
        }
        slots[p].sumsStart = sumStarts[t]
        slots[p].sumsLimit = sumLimits[t]
    }

    /// Appends `frame` as the newest buffered frame of the slot at `p`.
    @inline(__always)
    mutating func appendFrame(_ frame: BufferedFrame, at p: Int) {
        let count = slots[p].bufferedFrames
        if count == 0 || slots[p].uniformFrame == frame {
            // Equal frames: a count, and the seconds from the table.
            if count == 0 {
                slots[p].uniformFrame = frame
                if slots[p].sumsLimit == 0 || sumValues[slots[p].sumsStart + 1] != frame.duration {
                    useSumsTable(of: frame, at: p)
                }
            }
            slots[p].bufferedSeconds = uniformSeconds(count + 1, at: p)
            slots[p].bufferedFrames = count + 1
        } else {
            appendMixedFrame(frame, at: p)
        }
    }

    /// ``appendFrame(_:at:)`` when the frames differ.
    @inline(never)
    mutating func appendMixedFrame(_ frame: BufferedFrame, at p: Int) {
        let count = slots[p].bufferedFrames
        if let same = slots[p].uniformFrame {
            // Mixed from now on: the frames go into runs, with their sums.
            var mixed = BufferedFrames()
            for _ in 0..<count { mixed.append(same) }
            buffers[p] = mixed
            slots[p].uniformFrame = nil
        }
        buffers[p].append(frame)
        slots[p].bufferedFrames = count + 1
        slots[p].bufferedSeconds = buffers[p].seconds
    }

    /// Removes and returns the newest buffered frame of the slot at `p` (it has one).
    @inline(__always)
    mutating func popNewestFrame(at p: Int) -> BufferedFrame {
        guard let same = slots[p].uniformFrame else { return popNewestMixedFrame(at: p) }
        let count = slots[p].bufferedFrames - 1
        let seconds = count == 0 ? 0 : uniformSeconds(count, at: p)
        slots[p].bufferedFrames = count
        slots[p].bufferedSeconds = seconds
        if count == 0 { slots[p].uniformFrame = nil }
        return same
    }

    @inline(never)
    mutating func popNewestMixedFrame(at p: Int) -> BufferedFrame {
        slots[p].bufferedFrames -= 1
        let last = buffers[p].popLast()
        settleMixed(at: p)
        return last
    }

    /// Removes and returns the oldest buffered frame of the slot at `p` (it has one). Of equal frames, any one.
    @inline(__always)
    mutating func takeOldestFrame(at p: Int) -> BufferedFrame {
        guard slots[p].uniformFrame == nil else { return popNewestFrame(at: p) }
        return takeOldestMixedFrame(at: p)
    }

    @inline(never)
    mutating func takeOldestMixedFrame(at p: Int) -> BufferedFrame {
        slots[p].bufferedFrames -= 1
        let first = buffers[p].removeFirst()
        settleMixed(at: p)
        return first
    }

    /// After a mixed buffer lost a frame: its seconds, and back to a count once its frames are all the same again.
    mutating func settleMixed(at p: Int) {
        if let same = buffers[p].onlyFrame {
            slots[p].uniformFrame = same
            useSumsTable(of: same, at: p)
            slots[p].bufferedSeconds = uniformSeconds(slots[p].bufferedFrames, at: p)
            buffers[p] = BufferedFrames()
        } else {
            slots[p].bufferedSeconds = buffers[p].seconds
        }
    }

    mutating func add(_ slot: Slot) -> Int {
        slotKeys.append(slot.index)
        slots.append(slot)
        buffers.append(BufferedFrames())
        slotsVersion += 1
        return slotKeys.count - 1
    }

    mutating func remove(_ index: Int) {
        guard let i = position(of: index) else { return }
        slotKeys.remove(at: i)
        slots.remove(at: i)
        buffers.remove(at: i)
        failures[index] = nil
        slotsVersion += 1
    }
}
