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
        // OpenReplayKit's SDKs, the package at the root of the repository this sits in: it
        // depends on no other package, so this builds offline. The explicit `name:` is what
        // `package:` below refers to, whatever the folder is called. In a repository of your
        // own: .package(url: "https://…/OpenReplayKit.git", from: "0.25.0").
        .package(name: "OpenReplayKit", path: "../.."),
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
                .product(name: "ReplayExtensionKit", package: "OpenReplayKit"),
                .product(name: "ReplayMedia", package: "OpenReplayKit"),
                .product(name: "ReplayProcessing", package: "OpenReplayKit"),
            ]),
        .testTarget(
            name: "TemplateHLSExtensionTests",
            dependencies: [
                "TemplateHLSExtension",
                .product(name: "ReplayExtensionTesting", package: "OpenReplayKit"),
                .product(name: "ReplayMedia", package: "OpenReplayKit"),
            ]),
    ]
)
