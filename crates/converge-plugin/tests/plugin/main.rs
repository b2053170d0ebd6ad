//! converge-plugin's integration tests: the built-in providers, the plugin
//! host against real plugin processes, and the tfplugin6 host and value
//! codec. One module per concern, in one test binary so that the
//! dependency graph is linked once.

mod builtin_command;
mod builtin_file;
mod builtin_random;
mod plugin_host;
mod terraform_host;
mod terraform_values;
