// swift-tools-version: 6.1
// OpenReplayKit's programs: replayd, the capture process, replay, replay-ui, the shipped upload
// extensions, the demo scene, the examples, and every test. The SDKs they are built on are the
// package one folder up (the repository's root, which apps add by URL); this one is built by
// the scripts in ../scripts and never depended on.
import PackageDescription

/// Every Swift target: Swift 6 language mode plus the upcoming features that keep
/// module boundaries honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// A module of the SDKs' package (the repository's root).
func sdk(_ module: String) -> Target.Dependency { .product(name: module, package: "OpenReplayKit") }

let package = Package(
    name: "OpenReplayKitSystem",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "replayd", targets: ["replayd"]),
        .executable(name: "replay-capture", targets: ["replay-capture"]),
        .executable(name: "replay", targets: ["replay"]),
        .executable(name: "replay-demo-scene", targets: ["replay-demo-scene"]),
        .executable(name: "replay-ui", targets: ["replay-ui"]),
        .executable(name: "replay-file-extension", targets: ["replay-file-extension"]),
        .executable(name: "replay-rtmp-extension", targets: ["replay-rtmp-extension"]),
        .executable(name: "replay-srt-extension", targets: ["replay-srt-extension"]),
        .executable(name: "replay-hls-extension", targets: ["replay-hls-extension"]),
        .executable(name: "replay-webrtc-extension", targets: ["replay-webrtc-extension"]),
        .executable(name: "replay-videoroom-extension", targets: ["replay-videoroom-extension"]),
        .executable(name: "replay-gst-extension", targets: ["replay-gst-extension"]),
        // libopenreplaykit: the app SDK for C and every language with a C FFI.
        .library(name: "openreplaykit", type: .dynamic, targets: ["OpenReplayKitC"]),
    ],
    dependencies: [
        // The SDKs, by path; `name:` keeps product references fixed whatever the checkout's folder is called.
        .package(name: "OpenReplayKit", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // No default traits: FullFoundation and ConfigurationSupport load Foundation and ICU (issue 48).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // C libraries from Debian's packages, at the edges.
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libx264-dev"])]),
        .systemLibrary(
            name: "CXCB", pkgConfig: "xcb",
            providers: [.apt(["libxcb1-dev", "libxcb-shm0-dev", "libxcb-damage0-dev",
                              "libxcb-xfixes0-dev", "libxcb-randr0-dev", "libxcb-res0-dev"])]),
        .systemLibrary(
            name: "CGStreamer", pkgConfig: "gstreamer-webrtc-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstreamer-plugins-bad1.0-dev",
                              "gstreamer1.0-plugins-base", "gstreamer1.0-plugins-good", "gstreamer1.0-plugins-bad",
                              "gstreamer1.0-plugins-ugly", "gstreamer1.0-nice"])]),
        .systemLibrary(name: "CPulse", pkgConfig: "libpulse-simple", providers: [.apt(["libpulse-dev"])]),
        // The ScreenCast portal over D-Bus (sd-bus) and its PipeWire stream (Wayland capture).
        .systemLibrary(name: "CSDBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CPipeWire", pkgConfig: "libpipewire-0.3", providers: [.apt(["libpipewire-0.3-dev", "libspa-0.2-dev"])]),
        // SPA's pod builders and loop calls are C macros and inline functions: wrapped here, prefixed CPW_.
        .target(name: "CPipeWireShim", dependencies: ["CPipeWire"]),

        // GTK 4 for the desktop's dialogs (replay-ui), and its signal trampolines (g_signal_connect
        // is a macro; each signal has handlers of its own shape), prefixed CReplayUI_.
        .systemLibrary(name: "CGtk", pkgConfig: "gtk4", providers: [.apt(["libgtk-4-dev"])]),
        .target(name: "CReplayUI", dependencies: ["CGtk"]),

        .target(name: "CReplayd"),

        // What the control daemon and a capture process share about a session: the channel
        // between them and its messages, session control, areas, protected windows, errors.
        // Links no C library, so replayd stays light.
        .target(
            name: "ReplayCaptureModel",
            dependencies: [sdk("ReplayMedia"), sdk("ReplaySystem"), sdk("ReplayIPC"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        // The desktop without capturing it: X11's windows and key grabs (the X11 probes) and
        // PulseAudio's device list. replayd links this and no capture library.
        .target(
            name: "ReplayDesktop",
            dependencies: ["ReplayCaptureModel", sdk("ReplayMedia"), sdk("ReplaySystem"), "CXCB", "CPulse"],
            swiftSettings: strictSettings),
        // X11 screen capture, Wayland capture through the ScreenCast portal and PipeWire, PulseAudio capture.
        .target(
            name: "ReplayCapture",
            dependencies: ["ReplayCaptureModel", "ReplayDesktop", sdk("ReplayMedia"), sdk("ReplayProcessing"), sdk("ReplaySystem"), "ReplayDBus",
                           "CXCB", "CPulse", "CPipeWire", "CPipeWireShim"],
            swiftSettings: strictSettings),
        // FFmpeg-backed encoders and the fragmented MP4 writer.
        .target(name: "ReplayCodec", dependencies: [sdk("ReplayMedia"), sdk("ReplaySystem"), "CFFmpeg"], swiftSettings: strictSettings),
        // A D-Bus client over sd-bus: calls and signals with typed values (the ScreenCast portal, the test desktop).
        .target(name: "ReplayDBus", dependencies: [sdk("ReplaySystem"), "CSDBus"], swiftSettings: strictSettings),
        // A Hummingbird server on loopback, started from synchronous code, and URL tokens:
        // replayd's pages and the WebRTC extension's viewer page.
        .target(
            name: "ReplayLoopbackServer",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strictSettings),
        // A recording's pipeline (capture → encode → movie or clip buffer) and what every
        // session is built from: run inside a capture process (replay-capture), or in replayd.
        .target(
            name: "ReplaySession",
            dependencies: ["ReplayCaptureModel", sdk("ReplayMedia"), sdk("ReplayProcessing"), "ReplayCapture", "ReplayCodec", sdk("ReplayIPC"), sdk("ReplaySystem"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        // One recording or clip buffer in a short-lived process of its own, started by replayd.
        .executableTarget(
            name: "replay-capture",
            dependencies: ["ReplaySession", "ReplayCaptureModel", "ReplayDesktop", "ReplayCapture", "ReplayCodec", sdk("ReplayIPC"), sdk("ReplayMedia"), sdk("ReplaySystem"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings),
        // replayd as a library: connections, consent, the store, sessions and their processes.
        .target(
            name: "ReplayDaemon",
            dependencies: [
                "ReplayCaptureModel", "ReplayDesktop", sdk("ReplayMedia"), sdk("ReplayIPC"), sdk("ReplaySystem"), "ReplayLoopbackServer", "ReplayDBus",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strictSettings),
        // The virtual desktops (Xvfb, PulseAudio null sink, demo scene; or headless mutter, PipeWire and
        // the ScreenCast portal on a private bus): replay-demo-scene --desktop
        // runs `replay record` in one on a headless machine; the integration tests use it too.
        .target(
            name: "ReplayVirtualDesktop",
            dependencies: [sdk("ReplaySystem"), sdk("ReplayIPC"), "ReplayDBus", "CXCB", "CPulse"],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "replayd",
            dependencies: [
                "ReplayDaemon", "ReplayCaptureModel", sdk("ReplayIPC"), sdk("ReplaySystem"), "CReplayd",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings),
        .executableTarget(
            name: "replay",
            dependencies: [
                sdk("ReplayIPC"), sdk("ReplayMedia"), sdk("ReplaySystem"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings),
        // Reference upload extension: writes what it receives to a file (tests use it).
        .executableTarget(
            name: "replay-file-extension", dependencies: [sdk("ReplayExtensionKit"), sdk("ReplayMedia"), sdk("ReplaySystem")],
            path: "Sources/Extensions/File", exclude: ["file.json"], swiftSettings: strictSettings),
        // What the RTMP, SRT and HLS extensions share: the live video source, the audio mix,
        // encoding and an ingest connection that reconnects.
        .target(
            name: "ReplayUpload",
            dependencies: [sdk("ReplayExtensionKit"), sdk("ReplayProcessing"), "ReplayCodec", sdk("ReplayMedia"), sdk("ReplaySystem")],
            path: "Sources/Extensions/Upload", swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-rtmp-extension", dependencies: ["ReplayUpload"],
            path: "Sources/Extensions/RTMP", exclude: ["rtmp.json"], swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-srt-extension", dependencies: ["ReplayUpload"],
            path: "Sources/Extensions/SRT", exclude: ["srt.json"], swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-hls-extension", dependencies: ["ReplayUpload"],
            path: "Sources/Extensions/HLS", exclude: ["hls.json"], swiftSettings: strictSettings),
        // WebRTC publishing (WHIP) and local viewers (WHEP) through GStreamer's webrtcbin; the
        // GStreamer calls live in the C target CWebRTC.
        .target(
            name: "CWebRTC", dependencies: ["CGStreamer"], path: "Sources/Extensions/CWebRTC",
            cSettings: [.define("GST_USE_UNSTABLE_API")],
            linkerSettings: ["gstreamer-1.0", "gstbase-1.0", "gstapp-1.0", "gstvideo-1.0", "gstsdp-1.0", "gstwebrtc-1.0",
                             "gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }),
        // HTTP for the WebRTC and VideoRoom extensions (WHIP, Janus's API) through Debian's libcurl,
        // not URLSession, which would load Foundation and ICU (issue 48). curl_easy_setopt is
        // variadic: typed setters in CCurlShim, prefixed CCurl_.
        .systemLibrary(name: "CCurl", path: "Sources/Extensions/CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlShim", dependencies: ["CCurl"], path: "Sources/Extensions/CCurlShim"),
        .target(name: "ReplayHTTP", dependencies: ["CCurl", "CCurlShim"], path: "Sources/Extensions/HTTP", swiftSettings: strictSettings),
        // The encoder pipeline and its peers (WebRTCSession) and the loss-based bitrate
        // control, shared by the WebRTC and the Janus VideoRoom extensions.
        .target(
            name: "ReplayWebRTC", dependencies: ["CWebRTC", sdk("ReplayMedia"), sdk("ReplayProcessing"), sdk("ReplaySystem")], path: "Sources/Extensions/WebRTCCore",
            swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-webrtc-extension",
            dependencies: [
                "ReplayWebRTC", "CWebRTC", "ReplayHTTP", sdk("ReplayExtensionKit"), sdk("ReplayProcessing"), sdk("ReplayMedia"), sdk("ReplaySystem"),
                "ReplayLoopbackServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Extensions/WebRTC", exclude: ["webrtc.json"], swiftSettings: strictSettings),
        // A participant in a Janus VideoRoom room (a video call), through Janus's HTTP API.
        .executableTarget(
            name: "replay-videoroom-extension",
            dependencies: ["ReplayWebRTC", "CWebRTC", "ReplayHTTP", sdk("ReplayExtensionKit"), sdk("ReplayProcessing"), sdk("ReplayMedia"), sdk("ReplaySystem")],
            path: "Sources/Extensions/VideoRoom", exclude: ["videoroom.json"], swiftSettings: strictSettings),
        // Misbehaving extensions for the host's fault tests (never installed).
        .executableTarget(
            name: "replay-hostile-extension", dependencies: [sdk("ReplayExtensionKit"), sdk("ReplayMedia")],
            path: "Tests/HostileExtension", swiftSettings: strictSettings),
        // A PipeWire video source that sends DMA-BUF (or tiled, or shared-memory) buffers, for the capture's tests.
        .executableTarget(name: "replay-pipewire-test-source", dependencies: ["CPipeWire"], path: "Tests/PipeWireTestSource"),
        // Times the live video source's per-frame work for bench/processing.
        .executableTarget(
            name: "replay-processing-bench", dependencies: [sdk("ReplayProcessing"), sdk("ReplayMedia")],
            path: "Benchmarks/ProcessingBench", swiftSettings: strictSettings),
        // The examples' window (plain XCB) and JSON lines.
        .target(name: "ExampleWindow", dependencies: ["CXCB"], path: "Examples/Shared", swiftSettings: strictSettings),
        // An app that uses all of OpenReplayKit: hides its secret while captured, records, shares its window.
        .executableTarget(
            name: "secret-notes",
            dependencies: [sdk("OpenReplayKit"), "ExampleWindow", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/SecretNotes", swiftSettings: strictSettings),
        // A call app: shares its own window into a video call through the picker and the videoroom extension.
        .executableTarget(
            name: "call-share",
            dependencies: [sdk("OpenReplayKit"), "ExampleWindow", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/CallShare", swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-demo-scene",
            dependencies: ["ReplayVirtualDesktop", sdk("ReplaySystem"), sdk("ReplayIPC")],
            swiftSettings: strictSettings),

        .testTarget(
            name: "ReplayExtensionKitTests",
            dependencies: [sdk("ReplayExtensionKit"), sdk("ReplayExtensionTesting"), sdk("ReplayMedia"), sdk("ReplayIPC"), sdk("ReplaySystem"), "ReplayTestEvents"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayUploadTests", dependencies: ["ReplayUpload", "ReplayCodec", sdk("ReplayMedia"), sdk("ReplayProcessing")],
            swiftSettings: strictSettings),
        // The WebRTC extension's own logic (bitrate control, setup), tested in its executable module.
        .testTarget(
            name: "ReplayWebRTCTests", dependencies: ["replay-webrtc-extension", "replay-videoroom-extension", "ReplayWebRTC", sdk("ReplayProcessing")],
            swiftSettings: strictSettings),
        // The HTTP client against a real HTTP server on loopback (NIO's, started by each test).
        .testTarget(
            name: "ReplayHTTPTests",
            dependencies: ["ReplayHTTP", sdk("ReplaySystem"), "ReplayTestEvents", .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")],
            swiftSettings: strictSettings),
        // What the desktop's dialogs decide, without GTK: when Allow may be pressed and by whom,
        // which daemons they answer for, what they say.
        .target(name: "ReplayUIModel", dependencies: [sdk("ReplayIPC"), sdk("ReplaySystem")], swiftSettings: strictSettings),
        .executableTarget(
            name: "replay-ui", dependencies: ["CGtk", "CReplayUI", "ReplayUIModel", sdk("ReplayIPC"), sdk("ReplaySystem")], swiftSettings: strictSettings),
        .testTarget(name: "ReplayUIModelTests", dependencies: ["ReplayUIModel", sdk("ReplayIPC")], swiftSettings: strictSettings),
        .testTarget(name: "ReplayMediaTests", dependencies: [sdk("ReplayMedia")], swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayProcessingTests", dependencies: [sdk("ReplayProcessing"), sdk("ReplayMedia")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayCodecTests", dependencies: ["ReplayCodec", sdk("ReplayMedia"), sdk("ReplaySystem"), "ReplayTesting"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayCaptureTests", dependencies: ["ReplayCapture", "ReplayCaptureModel", "ReplayDesktop", "ReplayDBus", sdk("ReplaySystem"), sdk("ReplayMedia")],
            swiftSettings: strictSettings),
        // Events a unit test awaits with a deadline, for test targets that do not see ReplayCaptureModel's Completion.
        .target(name: "ReplayTestEvents", path: "Tests/ReplayTestEvents", swiftSettings: strictSettings),
        .testTarget(name: "ReplaySystemTests", dependencies: [sdk("ReplaySystem"), "ReplayTestEvents"], swiftSettings: strictSettings),
        .testTarget(name: "ReplayIPCTests", dependencies: [sdk("ReplayIPC"), sdk("ReplaySystem"), sdk("ReplayMedia")], swiftSettings: strictSettings),
        // The app SDK against a fake daemon on socket pairs.
        .testTarget(
            name: "OpenReplayKitTests", dependencies: [sdk("OpenReplayKit"), sdk("ReplayIPC"), sdk("ReplaySystem"), sdk("ReplayMedia")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReplayDaemonTests",
            dependencies: ["ReplayDaemon", "ReplaySession", "ReplayCaptureModel", "ReplayDesktop", sdk("ReplayIPC"), sdk("ReplaySystem"), "ReplayCapture",
                           "ReplayCodec", sdk("ReplayMedia"), "ReplayLoopbackServer",
                           .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio")],
            swiftSettings: strictSettings),
        // Shared fixture and media checks for the integration tests.
        .target(
            name: "ReplayTesting", dependencies: [sdk("ReplaySystem"), sdk("ReplayIPC"), "ReplayVirtualDesktop"],
            path: "Tests/ReplayTesting", exclude: ["Janus"], swiftSettings: strictSettings),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "ReplayTesting", sdk("ReplaySystem"), sdk("ReplayIPC"), "ReplayCapture", "ReplayCaptureModel", "ReplayDBus", sdk("ReplayMedia"), "ReplayVirtualDesktop", "replayd", "replay-capture", "replay", "replay-demo-scene", "secret-notes", "call-share",
                "replay-file-extension", "replay-hostile-extension",
                "replay-rtmp-extension", "replay-srt-extension", "replay-hls-extension", "replay-webrtc-extension",
                "replay-videoroom-extension", "replay-gst-extension",
            ],
            swiftSettings: strictSettings),

        // The gst extension: the person's GStreamer pipeline tail, fed the broadcast through appsrc.
        // GStreamer's core and appsrc from Debian; its calls (macros, GObject) in the C target CGstPipeline.
        .systemLibrary(
            name: "CGstApp", path: "Sources/Extensions/CGstApp", pkgConfig: "gstreamer-app-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "gstreamer1.0-plugins-base",
                              "gstreamer1.0-plugins-good", "gstreamer1.0-plugins-bad", "gstreamer1.0-plugins-ugly"])]),
        .target(
            name: "CGstPipeline", dependencies: ["CGstApp"], path: "Sources/Extensions/CGstPipeline",
            linkerSettings: ["gstreamer-1.0", "gstbase-1.0", "gstapp-1.0", "gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }),
        .executableTarget(
            name: "replay-gst-extension",
            dependencies: ["CGstPipeline", sdk("ReplayExtensionKit"), sdk("ReplayProcessing"), sdk("ReplayMedia"), sdk("ReplaySystem")],
            path: "Sources/Extensions/Gst", exclude: ["gst.json"], swiftSettings: strictSettings),
        // Its allowed list, the description built from the tail and its settings, with a fake parser and with GStreamer's.
        .testTarget(
            name: "ReplayGstTests", dependencies: ["replay-gst-extension"], swiftSettings: strictSettings),

        // libopenreplaykit: the app SDK for C and every language with a C FFI (issue 49), its
        // calls @_cdecl wrappers over OpenReplayKit; the soname carries the C interface's
        // major version. It is built here, not in the SDKs' package: a package others depend
        // on may not carry linker flags.
        // COpenReplayKit holds the header (and the pkg-config template), so the Swift side
        // is written against the very types C programs see.
        .target(name: "COpenReplayKit", exclude: ["openreplaykit.pc.in"]),
        .target(
            name: "OpenReplayKitC",
            dependencies: ["COpenReplayKit", sdk("OpenReplayKit"), sdk("ReplayIPC"), sdk("ReplayMedia"), sdk("ReplaySystem")],
            swiftSettings: strictSettings,
            linkerSettings: [.unsafeFlags(["-Xlinker", "-soname=libopenreplaykit.so.1"])]),
    ]
)
