// swift-tools-version: 6.1
// An upload extension for OpenReplayKit, ready to copy: it writes the broadcast into an HLS
// folder (a playlist and its segments). Rename it, then make it upload to your service.
import PackageDescription

let package = Package(
    name: "TemplateHLSExtension",
    platforms: [.macOS(.v15)],
    products: [
        // The executable replayd starts: the name the manifest's "executable" gives.
        .executable(name: "template-hls-extension", targets: ["TemplateHLSExtension"]),
    ],
    dependencies: [
        // OpenReplayKit's extension SDK, in the repository's sdk/ folder: it depends on no other
        // package, so this builds offline. The explicit `name:` is what `package:` below refers
        // to, whatever the folder is called. Outside the repository, point `path:` at your copy
        // of sdk/.
        .package(name: "OpenReplayKitSDK", path: "../../sdk"),
    ],
    targets: [
        // FFmpeg's C libraries from Debian's packages, found with pkg-config.
        .systemLibrary(
            name: "CLibAV", pkgConfig: "libavformat",
            providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libx264-dev"])]),
        .executableTarget(
            name: "TemplateHLSExtension",
            dependencies: [
                "CLibAV",
                .product(name: "ReplayExtensionKit", package: "OpenReplayKitSDK"),
                .product(name: "ReplayMedia", package: "OpenReplayKitSDK"),
                .product(name: "ReplayProcessing", package: "OpenReplayKitSDK"),
            ]),
        .testTarget(
            name: "TemplateHLSExtensionTests",
            dependencies: [
                "TemplateHLSExtension",
                .product(name: "ReplayExtensionTesting", package: "OpenReplayKitSDK"),
                .product(name: "ReplayMedia", package: "OpenReplayKitSDK"),
            ]),
    ]
)
