//! converge-proto's integration tests: the generated descriptors against
//! the published Python SDK's, the `tf` framework's and
//! `tfplugin-proto-all`'s, gRPC round trips, and values exchanged with the
//! SDK's own serializer. One module per concern, in one test binary so that
//! the dependency graph is linked once.
//! The Python scripts they run stay in `tests/`.

mod common;

mod deep;
mod descriptors;
mod grpc;
mod plugin_descriptors;
mod sdk_wire;
mod tf_descriptors;
mod tfplugin5_descriptors;
