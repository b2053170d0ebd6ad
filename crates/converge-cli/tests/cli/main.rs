//! converge-cli's end-to-end tests (the `converge` binary, the published
//! SDKs, real provider processes), one module per concern, in one test
//! binary: each binary links the whole dependency graph, so one binary for
//! the crate links it once instead of once per file. `common` is what the
//! modules share.

mod common;

mod aliases;
mod asset_hashes;
mod automation_flags;
mod automation_json;
mod automation_node;
mod automation_python;
mod automation_surface;
mod backends;
mod balancer;
mod component_conformance;
mod console;
mod crash;
mod custom_timeouts;
mod deep_values;
mod deploy_commands;
mod dynamic_providers;
mod guide_examples;
mod hostile_input;
mod import;
mod install_command;
mod kms_secrets;
mod monitor_features;
mod new_project;
mod nodejs_compat;
mod nodejs_parameterized;
mod nodejs_programs;
mod operation_flags;
mod passphrase_prompts;
mod plugin_commands;
mod plugin_startup;
mod policy_commands;
mod policy_packs;
mod policy_service;
mod provider_config;
mod pulumi_docs_flags;
mod pulumi_flags;
mod python_compat;
mod python_config;
mod python_display;
mod python_parameterized;
mod python_programs;
mod python_pulumi_provider;
mod python_targeting;
mod races;
mod readers_after_crash;
mod refresh_drift;
mod saved_plans;
mod serve;
mod signal_trials;
mod stack_commands;
mod stack_meta;
mod stack_ownership;
mod stack_reference;
mod state_commands;
mod state_migrations;
mod state_move;
mod terraform;
mod user_mistakes;
mod wire_features;
mod yaml_config;
mod yaml_functions;
mod yaml_options;
mod yaml_program;
mod yaml_tokens;
