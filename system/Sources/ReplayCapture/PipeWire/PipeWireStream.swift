import CPipeWire
import CPipeWireShim
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// A PipeWire video stream read on the caller's thread: the portal's node, on the remote
/// the portal handed us, or a camera on the session's PipeWire. The loop runs only inside
/// `iterate`, so every callback (format, state) and every buffer is handled on the one
/// thread that drives it.
final class PipeWireStream {
    private static let initialized: Void = pw_init(nil, nil)

    private let loop: UnsafeMutablePointer<pw_loop>
    private let context: OpaquePointer
    private let core: OpaquePointer
    private let stream: OpaquePointer
    private var listener: OpaquePointer?
    /// The producer's node: its id, or PW_ID_ANY with the name asked for.
    private let producer: (id: UInt32, name: String?)
    /// How many buffers the producer is asked to cycle through.
    private let bufferCount: Int32
    /// The newest frame, kept from the producer until it is converted.
    private var held: UnsafeMutablePointer<pw_buffer>?
    /// When the held frame was drawn (monotonic nanoseconds): its time.
    private(set) var heldSince: Int64 = 0

    /// The negotiated format; nil until the producer and we agree on one.
    private(set) var format: StreamFormat?
    /// How the newest picture lies in its buffer (turned, on a turned wlroots output).
    private(set) var turn = PictureTurn.none
    /// What changed since the last picture was converted.
    private var damage = DamageTracker()
    /// The pointer, when the producer sends it as metadata (drawn by the capture, or not).
    var cursor = MetadataCursor()

    /// The upright size of the newest picture: the format's, turned as the picture is.
    var pictureSize: (width: Int, height: Int)? {
        format.map { turn.uprightSize(width: $0.width, height: $0.height) }
    }
    /// How many pictures the producer sent (each change of the screen, up to the frame-rate cap).
    private(set) var received = 0
    /// Why the stream cannot go on; set by the callbacks, thrown by `iterate`.
    private var failure: String?
    private var wasStreaming = false
    /// Set once the producer left after streaming: its node was destroyed (the compositor
    /// closed the screen cast), so this stream will get nothing more.
    private(set) var producerGone = false

    /// Where the stream's node is.
    enum Source {
        /// The portal's node `node`, through `remote` (a descriptor PipeWire takes over, even on failure).
        case portal(remote: Int32, node: UInt32)
        /// A camera on the session's PipeWire (`$PIPEWIRE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR`):
        /// the node named `target` (its `node.name` or serial), or nil for the one the session
        /// manager links a camera stream to (the default video source).
        case camera(target: String?)
    }

    init(_ source: Source, preferredWidth: Int, preferredHeight: Int, maxFPS: Int) throws(CaptureError) {
        _ = Self.initialized
        let remote: Int32? = if case .portal(let remote, _) = source { remote } else { nil }
        guard let loop = pw_loop_new(nil) else {
            if let remote { close(remote) }
            throw CaptureError(.pipeWireFailed, "cannot make a PipeWire loop")
        }
        // Buffers not locked in memory: they are the producer's, and a user's memlock limit
        // (8 MB) is one 1080p picture; losing a frame to swap is no worse than any late frame.
        guard let context = pw_context_new(loop, pw_properties_new_string("mem.allow-mlock=false"), 0) else {
            if let remote { close(remote) }
            pw_loop_destroy(loop)
            throw CaptureError(.pipeWireFailed, "cannot make a PipeWire context")
        }
        guard let core = remote.map({ pw_context_connect_fd(context, $0, nil, 0) }) ?? pw_context_connect(context, nil, 0) else {
            let reason = String(cString: strerror(errno))
            pw_context_destroy(context)
            pw_loop_destroy(loop)
            throw CaptureError(.pipeWireFailed, remote != nil ? "cannot connect to the portal's PipeWire remote: \(reason)"
                : "cannot connect to PipeWire (is it running in this session?): \(reason)")
        }
        let node: UInt32
        var nodeName: String?
        let layouts: [PixelLayout]
        let properties: UnsafeMutablePointer<pw_properties>?
        switch source {
        case .portal(_, let portalNode):
            properties = pw_properties_new_string("media.type=Video media.category=Capture media.role=Screen")
            node = portalNode
            layouts = PixelLayout.screen
            // Three whole pictures, which the compositor allocates for this cast alone (8 MB each
            // at 1080p): one being converted, the newest waiting for us, one drawn into. With
            // two, sway's portal found none free while we converted and skipped pictures (it
            // kept 94–100% of a 30 fps scene, against 99–100% with three).
            bufferCount = 3
        case .camera(let target):
            properties = pw_properties_new_string("media.type=Video media.category=Capture media.role=Camera")
            if let target {
                pw_properties_set(properties, "target.object", target)
                // That camera or none: the session manager must not fall back to another.
                pw_properties_set(properties, "node.dont-reconnect", "true")
            }
            node = UInt32(bitPattern: -1)  // PW_ID_ANY: the target, or the session manager's choice
            nodeName = target
            layouts = PixelLayout.camera
            // A camera's driver queues buffers to fill ahead; its pictures are small.
            bufferCount = 4
        }
        guard let stream = pw_stream_new(core, "replayd", properties) else {
            pw_core_disconnect(core)
            pw_context_destroy(context)
            pw_loop_destroy(loop)
            throw CaptureError(.pipeWireFailed, "cannot make a PipeWire stream")
        }
        self.loop = loop
        self.context = context
        self.core = core
        self.stream = stream
        self.producer = (node, nodeName)

        var handlers = CPW_stream_handlers(
            context: Unmanaged.passUnretained(self).toOpaque(),
            state_changed: { context, _, state, error in
                Unmanaged<PipeWireStream>.fromOpaque(context!).takeUnretainedValue().stateChanged(state, error)
            },
            param_changed: { context, id, param in
                Unmanaged<PipeWireStream>.fromOpaque(context!).takeUnretainedValue().paramChanged(id, param)
            },
            process: nil)
        listener = CPW_stream_listen(stream, &handlers)

        // Shared memory first: we read pictures on the CPU, where a GPU's DMA-BUF is slow to read
        // (uncached). A linear DMA-BUF is the fallback, for producers that send nothing else.
        var podBuffer = [UInt8](repeating: 0, count: 2048)
        let formats = layouts.map(\.spaFormat)
        let result = podBuffer.withUnsafeMutableBufferPointer { buffer -> Int32 in
            let half = buffer.count / 2
            var pods = [false, true].map { linearDMABuf -> UnsafePointer<spa_pod>? in
                CPW_build_enum_format(buffer.baseAddress! + (linearDMABuf ? half : 0), UInt32(half), formats, UInt32(formats.count),
                                      UInt32(max(1, preferredWidth)), UInt32(max(1, preferredHeight)), UInt32(max(1, maxFPS)),
                                      linearDMABuf ? 1 : 0)
            }
            guard !pods.contains(where: { $0 == nil }) else { return -ENOSPC }
            let flags = pw_stream_flags(rawValue: PW_STREAM_FLAG_AUTOCONNECT.rawValue | PW_STREAM_FLAG_MAP_BUFFERS.rawValue)
            return pw_stream_connect(stream, SPA_DIRECTION_INPUT, node, flags, &pods, UInt32(pods.count))
        }
        guard result >= 0 else {
            throw CaptureError(.pipeWireFailed, "cannot connect a PipeWire stream: \(String(cString: strerror(-result)))")
        }
    }

    /// Why no format was agreed, when the producer's own offer says it: it sends only a GPU's
    /// tiled DMA-BUF, which is not read here. Nil when its offer was readable or not found.
    func whyNoFormat(timeout: Double = 2) -> String? {
        var offer = CPW_producer_offer()
        let milliseconds = Int32(timeout * 1000)
        let result = if let name = producer.name {
            name.withCString { CPW_inspect_producer(loop, core, producer.id, $0, milliseconds, &offer) }
        } else {
            CPW_inspect_producer(loop, core, producer.id, nil, milliseconds, &offer)
        }
        guard result == 0, offer.found != 0, offer.formats > 0, offer.readable == 0 else { return nil }
        if offer.gpu_modifier != 0 {
            return "it sends only DMA-BUF in a GPU's tiled layout (modifier 0x\(String(offer.gpu_modifier, radix: 16))), which "
                + "only that GPU can read; replayd reads shared memory or a linear DMA-BUF"
        }
        return "it offers no buffers replayd can read (shared memory or a linear DMA-BUF)"
    }

    /// Stops reading: the producer's buffers go back, and this returns once the server has
    /// removed the stream's node. A node left behind still names its producer by id, and
    /// PipeWire gives ids again: the session manager linked it to the next cast of the same
    /// monitor (mutter's new node had the old one's id), and that cast, with a consumer that
    /// never reads, agreed on no format.
    func disconnect() {
        releaseHeld()
        pw_stream_disconnect(stream)
        _ = CPW_core_roundtrip(loop, core, 1000)
    }

    deinit {
        // Closing the connection removes the node at once: no need to wait for the server.
        releaseHeld()
        pw_stream_disconnect(stream)
        CPW_stream_unlisten(listener)
        pw_stream_destroy(stream)
        pw_core_disconnect(core)
        pw_context_destroy(context)
        pw_loop_destroy(loop)
    }

    /// Runs the loop for up to `timeout` seconds (returning early once something was
    /// dispatched); throws once the stream failed or ended.
    func iterate(timeout: Double) throws(CaptureError) {
        let result = CPW_loop_iterate(loop, Int32(max(0, min(timeout, 1)) * 1000))
        if result < 0 && result != -EINTR { failure = failure ?? "the PipeWire loop failed: \(String(cString: strerror(-result)))" }
        if let failure { throw CaptureError(.connectionLost, failure) }
    }

    /// Takes every frame the producer has queued, keeping the newest with a picture (older
    /// ones go straight back). True when a frame is held.
    @discardableResult
    func takeNewest() -> Bool {
        while let buffer = pw_stream_dequeue_buffer(stream) {
            var view = CPW_frame_view()
            CPW_buffer_view(buffer, &view)
            damage.add(Self.damage(of: buffer))
            // Every buffer says where the pointer is, also one without a picture.
            var pointer = CPW_cursor()
            if CPW_buffer_cursor(buffer, &pointer) == 0 {
                cursor.update(x: Int(pointer.x), y: Int(pointer.y), newSprite: pointer.has_bitmap != 0 ? Self.sprite(of: pointer) : nil)
            }
            // An empty chunk is a cursor-only or damage-only update: nothing to show.
            if view.data != nil && view.size > 0 && view.corrupted == 0 {
                received += 1
                releaseHeld()
                held = buffer
                heldSince = Self.captureTime(pts: view.pts, now: MonotonicClock.nanoseconds())
                turn = PictureTurn(spaTransform: view.transform)
            } else {
                pw_stream_queue_buffer(stream, buffer)
            }
        }
        return held != nil
    }

    var holdsFrame: Bool { held != nil }

    /// The parts of the held picture that changed since the last one converted (see
    /// `DamageTracker.takeParts`); nil to convert it whole. Call once per converted picture.
    func takeDamagedParts(width: Int, height: Int) -> [DamageTracker.Rect]? {
        damage.takeParts(width: width, height: height)
    }

    /// The pointer's new picture as premultiplied RGBA; a sprite of no size when it is hidden,
    /// or in a layout this consumer does not read.
    private static func sprite(of pointer: CPW_cursor) -> MetadataCursor.Sprite {
        let hidden = MetadataCursor.Sprite(width: 0, height: 0, hotspotX: 0, hotspotY: 0, pixels: [])
        guard let source = pointer.pixels, pointer.width > 0, pointer.height > 0,
              let layout = PixelLayout(spaFormat: pointer.format), layout != .yuy2 else { return hidden }
        let width = Int(pointer.width), height = Int(pointer.height)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let from = source + y * Int(pointer.stride) + x * 4, to = (y * width + x) * 4
                let (red, blue) = layout.isBlueFirst ? (from[2], from[0]) : (from[0], from[2])
                let alpha = layout == .bgrx || layout == .rgbx ? 255 : from[3]
                (pixels[to], pixels[to + 1], pixels[to + 2], pixels[to + 3]) = (red, from[1], blue, alpha)
            }
        }
        return MetadataCursor.Sprite(width: width, height: height, hotspotX: Int(pointer.hotspot_x), hotspotY: Int(pointer.hotspot_y),
                                     pixels: pixels)
    }

    private static func damage(of buffer: UnsafeMutablePointer<pw_buffer>) -> [DamageTracker.Rect]? {
        var rects = [CPW_rect](repeating: CPW_rect(), count: DamageTracker.limit)
        let count = CPW_buffer_damage(buffer, &rects, Int32(rects.count))
        guard count > 0 else { return nil }
        return rects.prefix(Int(count)).map { DamageTracker.Rect(x: Int($0.x), y: Int($0.y), width: Int($0.width), height: Int($0.height)) }
    }

    /// When a frame was drawn: the producer's presentation time where it is on our clock
    /// (mutter stamps frames with CLOCK_MONOTONIC as it paints them, up to a refresh before
    /// we dequeue them), else the time we took it.
    static func captureTime(pts: Int64, now: Int64) -> Int64 {
        pts > 0 && pts <= now && now - pts < 200_000_000 ? pts : now
    }

    /// Lends the held frame's pixels and row bytes; nil when none is held or it is too short
    /// for the format.
    func withHeldFrame<R>(_ body: (UnsafeRawPointer, Int, StreamFormat) -> R) -> R? {
        guard let held, let format else { return nil }
        var view = CPW_frame_view()
        CPW_buffer_view(held, &view)
        guard let data = view.data, let rowBytes = format.rowBytes(stride: view.stride, size: view.size) else { return nil }
        CPW_buffer_begin_read(held)
        defer { CPW_buffer_end_read(held) }
        return body(UnsafeRawPointer(data), rowBytes, format)
    }

    /// Gives the held frame back to the producer.
    func releaseHeld() {
        if let held { pw_stream_queue_buffer(stream, held) }
        held = nil
    }

    private func stateChanged(_ state: pw_stream_state, _ error: UnsafePointer<CChar>?) {
        switch state {
        case PW_STREAM_STATE_ERROR:
            failure = "the PipeWire stream failed: \(error.map { String(cString: $0) } ?? "no reason given")"
        case PW_STREAM_STATE_STREAMING:
            wasStreaming = true
        case PW_STREAM_STATE_PAUSED where wasStreaming, PW_STREAM_STATE_UNCONNECTED where wasStreaming:
            // Unlinked: the producer's node is gone.
            producerGone = true
        default:
            break
        }
    }

    private func paramChanged(_ id: UInt32, _ param: UnsafePointer<spa_pod>?) {
        guard id == SPA_PARAM_Format.rawValue, let param else { return }
        var parsed = CPW_video_format()
        guard CPW_parse_video_format(param, &parsed) == 0, let layout = PixelLayout(spaFormat: parsed.format),
              parsed.width > 0, parsed.height > 0 else {
            failure = "the PipeWire producer chose a format this consumer cannot read"
            return
        }
        if parsed.has_modifier != 0 {
            // The producer fixes the modifier and offers the format again; until then, nothing to do.
            guard parsed.modifier_fixed != 0 else { return }
            guard parsed.modifier == UInt64(CPW_MODIFIER_LINEAR) else {
                failure = "the PipeWire producer chose a tiled DMA-BUF (modifier 0x\(String(parsed.modifier, radix: 16))), which only its GPU can read"
                return
            }
        }
        // The frame held was drawn in the old format.
        releaseHeld()
        damage.invalidate()
        format = StreamFormat(layout: layout, width: Int(parsed.width), height: Int(parsed.height))
        // A format with a modifier is a DMA-BUF one (mapped by the shim's listener); else shared memory.
        var podBuffer = [UInt8](repeating: 0, count: 1024)
        var params = [UnsafePointer<spa_pod>?](repeating: nil, count: 8)
        let dataTypes = parsed.has_modifier != 0 ? UInt32(1 << SPA_DATA_DmaBuf.rawValue)
            : UInt32(1 << SPA_DATA_MemFd.rawValue | 1 << SPA_DATA_MemPtr.rawValue)
        podBuffer.withUnsafeMutableBufferPointer { buffer in
            params.withUnsafeMutableBufferPointer { params in
                let count = CPW_build_buffer_params(buffer.baseAddress, UInt32(buffer.count), dataTypes, bufferCount,
                                                    params.baseAddress, UInt32(params.count))
                _ = pw_stream_update_params(stream, params.baseAddress, count)
            }
        }
    }
}
