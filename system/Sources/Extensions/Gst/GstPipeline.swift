import CGstPipeline
import Glibc
import ReplayMedia

/// The Swift face of CGstPipeline: a pipeline parsed from a description, looked at before it
/// plays, then fed the broadcast's samples. Every method may be called from any thread.
final class GstPipeline: @unchecked Sendable {
    // @unchecked: `pointer` is immutable and CGstPipeline locks internally; `errors` is set
    // before the pipeline plays and never changes.
    struct Failure: Error, CustomStringConvertible, Equatable {
        let description: String
        /// Elements GStreamer did not have (not installed, or not loaded: not allowed).
        var missing: [String] = []
    }

    /// What GStreamer's threads report; set once, before the pipeline plays.
    final class Errors: Sendable {
        let report: @Sendable (String) -> Void

        init(_ report: @escaping @Sendable (String) -> Void) { self.report = report }
    }

    private let pointer: OpaquePointer
    private var errors: Errors?

    /// Loads GStreamer with only the plugins of the allowed elements (once per process).
    static func initialize(registryDirectory: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        let names = GstAllowedElements.plugins.map { strdup($0) }
        defer { names.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = names.map { UnsafePointer($0) } + [nil]
        let status = pointers.withUnsafeMutableBufferPointer { cgst_initialize(registryDirectory, $0.baseAddress, &error) }
        guard status == 0 else { throw Failure(description: take(error) ?? "GStreamer did not start") }
    }

    /// Parses `description`; nothing plays yet.
    init(parsing description: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?, missing: UnsafeMutablePointer<CChar>?
        guard let made = cgst_pipeline_parse(description, &error, &missing) else {
            let names = Self.take(missing).map { $0.split(separator: ",").map(String.init) } ?? []
            throw Failure(description: Self.take(error) ?? "GStreamer could not parse the pipeline", missing: names)
        }
        pointer = made
    }

    deinit { cgst_pipeline_free(pointer) }

    /// Every element GStreamer made, with the properties the checks look at.
    var elements: [GstParsedElement] {
        (0..<cgst_pipeline_element_count(pointer)).map { index in
            let factory = Self.take(cgst_pipeline_element_factory(pointer, index)) ?? ""
            var properties: [String: String] = [:]
            for property in GstAllowedElements.checkedProperties[factory] ?? [] {
                properties[property] = Self.take(cgst_pipeline_element_property(pointer, index, property))
            }
            return GstParsedElement(factory: factory, name: Self.take(cgst_pipeline_element_name(pointer, index)) ?? "", properties: properties)
        }
    }

    var takesAudio: Bool { cgst_pipeline_takes_audio(pointer) != 0 }

    /// Plays it; `errors` hears the first error, on one of GStreamer's threads.
    func start(fps: Int, errors: Errors) throws(Failure) {
        self.errors = errors
        var error: UnsafeMutablePointer<CChar>?
        let status = cgst_pipeline_start(pointer, Int32(fps), Unmanaged.passUnretained(errors).toOpaque(), { context, message in
            guard let context else { return }
            Unmanaged<Errors>.fromOpaque(context).takeUnretainedValue().report(message.map { String(cString: $0) } ?? "unknown error")
        }, &error)
        guard status == 0 else { throw Failure(description: Self.take(error) ?? "the pipeline did not start") }
    }

    /// One picture, used in place: its storage is held until GStreamer has taken it.
    func push(_ sample: VideoSample) {
        let pixels = sample.pixels
        let held = Unmanaged.passRetained(pixels.storage).toOpaque()
        let bt709: Int32 = pixels.format.matrix == .bt709 ? 1 : 0, fullRange: Int32 = pixels.format.range == .full ? 1 : 0
        _ = cgst_pipeline_push_video(pointer, pixels.baseAddress.assumingMemoryBound(to: UInt8.self), pixels.bytes.count, Int32(pixels.width),
                                     Int32(pixels.height), bt709, fullRange, sample.time.nanoseconds, { held in
                                         if let held { Unmanaged<PixelStorage>.fromOpaque(held).release() }
                                     }, held)
    }

    /// 48 kHz interleaved stereo.
    func push(_ audio: AudioBuffer) {
        guard audio.sampleRate == 48_000, audio.channels == 2 else { return }
        audio.samples.withUnsafeBufferPointer { samples in
            _ = cgst_pipeline_push_audio(pointer, samples.baseAddress, Int32(audio.frameCount), audio.time.nanoseconds)
        }
    }

    /// Ends the stream and waits (up to `timeout` seconds) until every sink has it, so a
    /// muxer writes its index and a server hears the end.
    func finish(timeout: Double) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        guard cgst_pipeline_finish(pointer, Int32(timeout * 1000), &error) == 0 else {
            throw Failure(description: Self.take(error) ?? "the pipeline did not finish")
        }
    }

    private static func take(_ string: UnsafeMutablePointer<CChar>?) -> String? {
        guard let string else { return nil }
        defer { cgst_free(string) }
        return String(cString: string)
    }
}
