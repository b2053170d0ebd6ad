//! One module per command group.

pub mod config;
pub mod login;
pub mod stack;
