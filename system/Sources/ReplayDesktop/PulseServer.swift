import CPulse
package import ReplayCaptureModel

/// A connection to the PulseAudio server (or pipewire-pulse) on a threaded main loop of its
/// own, and the questions replayd asks it. The introspection calls expect the main loop
/// locked by the caller (they wait on it, which unlocks it meanwhile).
package final class PulseServer {
    package let mainloop: OpaquePointer
    package let context: OpaquePointer

    /// Connects and waits until the server is ready; throws `audioUnavailable` when none answers.
    package init() throws(CaptureError) {
        guard let mainloop = pa_threaded_mainloop_new() else { throw CaptureError(.audioUnavailable, "out of memory") }
        guard let context = pa_context_new(pa_threaded_mainloop_get_api(mainloop), "OpenReplayKit replayd") else {
            pa_threaded_mainloop_free(mainloop)
            throw CaptureError(.audioUnavailable, "out of memory")
        }
        self.mainloop = mainloop
        self.context = context
        pa_context_set_state_callback(context, { _, userdata in
            pa_threaded_mainloop_signal(OpaquePointer(userdata), 0)
        }, UnsafeMutableRawPointer(mainloop))

        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard pa_context_connect(context, nil, PA_CONTEXT_NOFLAGS, nil) >= 0, pa_threaded_mainloop_start(mainloop) >= 0 else {
            throw CaptureError(.audioUnavailable, "no audio server (\(errorText))")
        }
        while true {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { break }
            if PA_CONTEXT_IS_GOOD(state) == 0 { throw CaptureError(.audioUnavailable, "no audio server (\(errorText))") }
            pa_threaded_mainloop_wait(mainloop)
        }
    }

    deinit {
        pa_threaded_mainloop_lock(mainloop)
        pa_context_set_state_callback(context, nil, nil)
        pa_context_disconnect(context)
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        pa_context_unref(context)
        pa_threaded_mainloop_free(mainloop)
    }

    /// The server's words for its last error.
    package var errorText: String { String(cString: pa_strerror(pa_context_errno(context))) }

    /// The names of the default sink and source; nil where the server names none.
    package func defaults() -> (sink: String?, source: String?) {
        let names = Introspection.ask(mainloop) { answer in
            pa_context_get_server_info(context, { _, info, userdata in
                let answer = Introspection.of(userdata)
                answer.texts = [info?.pointee.default_sink_name, info?.pointee.default_source_name].map { name in
                    name.map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
                }
                answer.finish()
            }, answer)
        }.texts
        return names.count == 2 ? (names[0], names[1]) : (nil, nil)
    }

    /// "<default sink>.monitor": what the default output plays, as a source's name.
    package func defaultSinkMonitor() -> String? { defaults().sink.map { "\($0).monitor" } }

    /// The outputs (sinks), each marked if it is `defaultName`.
    package func sinks(defaultName: String?) -> [AudioDevice] {
        Introspection.ask(mainloop) { answer in
            pa_context_get_sink_info_list(context, { _, info, end, userdata in
                let answer = Introspection.of(userdata)
                guard let info, end == 0 else { return answer.finish() }
                answer.devices.append(AudioDevice(name: info.pointee.name.map { String(cString: $0) } ?? "",
                                                  description: info.pointee.description.map { String(cString: $0) } ?? "",
                                                  isDefault: false))
            }, answer)
        }.devices.map { AudioDevice(name: $0.name, description: $0.description, isDefault: $0.name == defaultName) }
    }

    /// The inputs (sources) that are not an output's monitor, each marked if it is `defaultName`.
    package func sources(defaultName: String?) -> [AudioDevice] {
        Introspection.ask(mainloop) { answer in
            pa_context_get_source_info_list(context, { _, info, end, userdata in
                let answer = Introspection.of(userdata)
                guard let info, end == 0 else { return answer.finish() }
                // A monitor records an output: listed under outputs, not as a microphone.
                guard info.pointee.monitor_of_sink == UInt32.max else { return }  // PA_INVALID_INDEX
                answer.devices.append(AudioDevice(name: info.pointee.name.map { String(cString: $0) } ?? "",
                                                  description: info.pointee.description.map { String(cString: $0) } ?? "",
                                                  isDefault: false))
            }, answer)
        }.devices.map { AudioDevice(name: $0.name, description: $0.description, isDefault: $0.name == defaultName) }
    }

    /// A playback stream: its index, the sink it plays on, and the names of its application.
    package struct PlaybackStream {
        package let index: UInt32
        package let sink: UInt32
        package let names: [String]
    }

    /// Every application's playback stream now.
    package func playbackStreams() -> [PlaybackStream] {
        Introspection.ask(mainloop) { answer in
            pa_context_get_sink_input_info_list(context, { _, info, end, userdata in
                let answer = Introspection.of(userdata)
                guard let info, end == 0 else { return answer.finish() }
                let keys: [String] = ["application.name", "application.process.binary"]
                let names = keys.compactMap { (key: String) -> String? in
                    pa_proplist_gets(info.pointee.proplist, key).map { String(cString: $0) }
                }
                answer.streams.append(PlaybackStream(index: info.pointee.index, sink: info.pointee.sink, names: names))
            }, answer)
        }.streams
    }

    /// The name of the sink with this index.
    package func sinkName(index: UInt32) -> String? {
        Introspection.ask(mainloop) { answer in
            pa_context_get_sink_info_by_index(context, index, { _, info, end, userdata in
                let answer = Introspection.of(userdata)
                guard let info, end == 0 else { return answer.finish() }
                answer.texts = [info.pointee.name.map { String(cString: $0) }]
            }, answer)
        }.texts.first ?? nil
    }

    /// The outputs and inputs, for `listSources`.
    package static func devices() throws(CaptureError) -> (outputs: [AudioDevice], inputs: [AudioDevice]) {
        let server = try PulseServer()
        pa_threaded_mainloop_lock(server.mainloop)
        defer { pa_threaded_mainloop_unlock(server.mainloop) }
        let defaults = server.defaults()
        return (server.sinks(defaultName: defaults.sink), server.sources(defaultName: defaults.source))
    }
}

/// One answer of the audio server's introspection, filled in by its C callback (which gets
/// this object as its user data) on the main loop's thread.
private final class Introspection {
    package let mainloop: OpaquePointer
    package var done = false
    package var texts: [String?] = []
    package var devices: [AudioDevice] = []
    package var streams: [PulseServer.PlaybackStream] = []

    private init(_ mainloop: OpaquePointer) { self.mainloop = mainloop }

    package static func of(_ userdata: UnsafeMutableRawPointer?) -> Introspection {
        Unmanaged<Introspection>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// The request's last callback: wakes the caller.
    package func finish() {
        done = true
        pa_threaded_mainloop_signal(mainloop, 0)
    }

    /// Starts `request` (its callbacks get the answer as user data) and waits for it to
    /// finish, the main loop locked by the caller (waiting unlocks it).
    package static func ask(_ mainloop: OpaquePointer, _ request: (UnsafeMutableRawPointer) -> OpaquePointer?) -> Introspection {
        let answer = Introspection(mainloop)
        let retained = Unmanaged.passRetained(answer)
        defer { retained.release() }
        guard let operation = request(retained.toOpaque()) else { return answer }
        defer { pa_operation_unref(operation) }
        while !answer.done && pa_operation_get_state(operation) == PA_OPERATION_RUNNING {
            pa_threaded_mainloop_wait(mainloop)
        }
        return answer
    }
}
