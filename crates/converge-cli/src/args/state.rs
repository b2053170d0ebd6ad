//! `converge state` subcommands' arguments.

use clap::{Args, Subcommand};

use super::StackArg;

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Forget resources: delete them from the stack's state, leaving their
    /// cloud objects as they are.
    #[command(alias = "remove")]
    Delete {
        /// Exact URNs of the resources to forget.
        #[arg(
            value_name = "URN",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        urns: Vec<String>,
        #[command(flatten)]
        stack: StackArg,
        /// Forget every resource of the stack.
        #[arg(long)]
        all: bool,
        /// Forget protected resources too.
        #[arg(long)]
        force: bool,
        /// Forget the resources that depend on these too.
        #[arg(long)]
        target_dependents: bool,
        /// Skip the confirmation prompt.
        #[arg(short, long)]
        yes: bool,
    },
    /// Protect resources: an update or destroy will not delete them.
    Protect(ProtectArgs),
    /// Clear resources' protection.
    Unprotect(ProtectArgs),
    /// Taint resources: the next update replaces them.
    Taint(TaintArgs),
    /// Clear resources' taint.
    Untaint(TaintArgs),
    /// Rename a resource in the stack's state, rewriting every reference to it.
    Rename {
        /// Exact URN of the resource.
        #[arg(value_name = "URN")]
        urn: String,
        /// Its new name.
        #[arg(value_name = "NEW_NAME")]
        new_name: String,
        #[command(flatten)]
        stack: StackArg,
        /// Skip the confirmation prompt (asked only at a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// Move resources, with their children, from one stack to another (the
    /// providers they use are copied).
    Move(MoveArgs),
    /// Repair a state that fails integrity verification: put resources in
    /// order and drop references to resources it does not hold.
    Repair {
        #[command(flatten)]
        stack: StackArg,
        /// Skip the confirmation prompt.
        #[arg(short, long)]
        yes: bool,
    },
}

/// `state move`.
#[derive(Debug, Args, Clone)]
pub struct MoveArgs {
    /// Exact URNs of the resources to move (in the source stack).
    #[arg(value_name = "URN", required = true)]
    pub urns: Vec<String>,
    /// The stack to move from (`stack`, `project/stack` or
    /// `org/project/stack`; default: the current stack).
    #[arg(long, value_name = "STACK")]
    pub source: Option<String>,
    /// The stack to move to (default: the current stack).
    #[arg(long, value_name = "STACK")]
    pub dest: Option<String>,
    /// Move the parents of the resources too.
    #[arg(long)]
    pub include_parents: bool,
    /// Skip the confirmation prompt.
    #[arg(short, long)]
    pub yes: bool,
}

/// `state taint` and `state untaint`.
#[derive(Debug, Args, Clone)]
pub struct TaintArgs {
    /// Exact URNs of the resources.
    #[arg(value_name = "URN", required = true)]
    pub urns: Vec<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Skip the confirmation prompt (asked only at a terminal).
    #[arg(short, long)]
    pub yes: bool,
}

/// `state protect` and `state unprotect`.
#[derive(Debug, Args, Clone)]
pub struct ProtectArgs {
    /// Exact URNs of the resources.
    #[arg(
        value_name = "URN",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub urns: Vec<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Every resource of the stack.
    #[arg(long)]
    pub all: bool,
    /// Skip the confirmation prompt (asked only at a terminal).
    #[arg(short, long)]
    pub yes: bool,
}
