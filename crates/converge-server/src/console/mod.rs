//! The web console, served at `/` beside the API: a login page that takes
//! an access token, the organization's stacks, a stack's outputs, history
//! and live update, its resources (filtered), one resource, the resource
//! graph drawn as SVG, and the organization's tokens (revocable), members
//! and roles, teams, audit log, and policy packs with the violations
//! recent updates reported.
//!
//! Every page shows what one of the API's documented routes answers (the
//! same functions build both), with the same tokens and organization
//! scoping: the login form's token is checked as the API checks it, and a
//! session cookie (random id, HttpOnly, SameSite=Strict, stored hashed in
//! the database with an expiry) stands for it afterwards. State changes
//! (login, logout, revoking a token) are POSTs from this origin only. Templates are askama's
//! (compiled in), the graph is laid out by `layout-rs`, and the CSS and
//! JavaScript are embedded: the console needs no network.

mod admin;
mod assets;
mod graph;
mod login;
mod page;
mod resources;
mod session;
mod stack;
mod stacks;

use axum::routing::{get, post};
use axum::Router;

use crate::api::AppState;

pub(crate) use page::not_found;

/// The console's routes (HTML), for merging with the API's.
pub(crate) fn router(state: AppState) -> Router {
    const STACK: &str = "/stacks/{org}/{project}/{stack}";
    Router::new()
        .route("/", get(stacks::page))
        .route("/login", get(login::form).post(login::submit))
        .route("/logout", post(login::logout))
        .route("/assets/{name}", get(assets::serve))
        .route("/tokens", get(admin::tokens))
        .route("/tokens/{id}/revoke", post(admin::revoke))
        .route("/members", get(admin::members))
        .route("/teams", get(admin::teams))
        .route("/policies", get(admin::policies))
        .route("/audit", get(admin::audit))
        .route(STACK, get(stack::page))
        .route(&format!("{STACK}/events"), get(stack::events))
        .route(&format!("{STACK}/resources"), get(resources::list_page))
        .route(
            &format!("{STACK}/resources/{{urn}}"),
            get(resources::detail_page),
        )
        .route(&format!("{STACK}/graph"), get(graph::page))
        .with_state(state)
}
