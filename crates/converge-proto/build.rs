//! Compiles Converge's pulumirpc, tfplugin5 and tfplugin6 .proto files (in `proto/`) with protox, so no
//! system `protoc` is needed, and generates prost messages plus tonic clients
//! and servers. The compiled descriptor set is also written to OUT_DIR, for
//! the compatibility test and for gRPC reflection. Clients and servers use
//! our codec (`src/codec.rs`), which bounds how deep a message may nest.

use std::path::PathBuf;

use prost::Message;

/// Every file we define, relative to `proto/`. Their imports of Google's
/// well-known types come from protox's bundled copies.
const PROTO_FILES: &[&str] = &[
    "google/protobuf/status.proto",
    "plugin/grpc_controller.proto",
    "plugin/grpc_stdio.proto",
    "pulumi/alias.proto",
    "pulumi/analyzer.proto",
    "pulumi/callback.proto",
    "pulumi/codegen/hcl.proto",
    "pulumi/engine.proto",
    "pulumi/errors.proto",
    "pulumi/events.proto",
    "pulumi/language.proto",
    "pulumi/plugin.proto",
    "pulumi/provider.proto",
    "pulumi/resource.proto",
    "pulumi/source.proto",
    "tfplugin5/tfplugin5.proto",
    "tfplugin6/tfplugin6.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler.include_imports(true).include_source_info(true);
    for file in PROTO_FILES {
        compiler.open_file(file)?;
    }
    let descriptors = compiler.file_descriptor_set();
    std::fs::write(
        out_dir.join("converge_descriptor_set.bin"),
        descriptors.encode_to_vec(),
    )?;

    tonic_prost_build::configure()
        .codec_path("crate::codec::ConvergeCodec")
        .build_client(true)
        .build_server(true)
        .generate_default_stubs(true)
        .compile_fds(descriptors)?;
    Ok(())
}
