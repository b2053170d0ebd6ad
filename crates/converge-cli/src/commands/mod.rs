//! One module per command group.

pub mod about;
pub mod cancel;
pub mod config;
pub mod confirm;
pub mod deploy;
pub mod execute;
pub mod import;
pub mod install;
pub mod login;
pub mod new;
pub mod open_stack;
pub mod plan_file;
pub mod plugin;
pub mod policy;
pub mod serve;
pub mod stack;
pub mod state;
pub mod version;
