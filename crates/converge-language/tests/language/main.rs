//! converge-language's integration tests: Python and Node.js programs run
//! with the published SDKs, YAML programs' static errors and their
//! lifecycle across successive operations. One module per concern, in one
//! test binary so that the dependency graph is linked once.

mod common;

mod nodejs_programs;
mod python_programs;
mod yaml_errors;
mod yaml_lifecycle;
mod yaml_schema_errors;
