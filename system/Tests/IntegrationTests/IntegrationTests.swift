import Testing

/// Every integration test records in real time on a shared 2-core machine, so they run one
/// at a time: in parallel they would steal each other's frames.
@Suite(.serialized) struct IntegrationTests {}
