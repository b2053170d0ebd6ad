//! Logging in with an access token (a POSTed form: the token never goes
//! in a URL) and logging out.

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::page::{self, Nav};
use super::session::{self, clear_cookie, same_origin, set_cookie};
use crate::api::AppState;
use crate::error::ApiError;

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    nav: Option<Nav>,
    error: Option<String>,
}

fn login_page(status: StatusCode, error: Option<String>) -> Response {
    page::render(status, &LoginPage { nav: None, error })
}

/// `GET /login`: the form, or the stacks for a live session.
pub(crate) async fn form(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = session::session_id(&headers) {
        if state.store.session_caller(&id).await.is_ok() {
            return page::secure(Redirect::to("/").into_response());
        }
    }
    login_page(StatusCode::OK, None)
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    token: String,
}

fn cross_site() -> Response {
    page::error(
        None,
        &ApiError::forbidden("This form was sent from another site; log in from the console."),
    )
}

/// `POST /login`: checks the token as the API does and starts a session.
pub(crate) async fn submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    if !same_origin(&headers) {
        return cross_site();
    }
    let token = match &form {
        Ok(Form(f)) => f.token.trim(),
        Err(_) => "",
    };
    if token.is_empty() {
        return login_page(
            StatusCode::BAD_REQUEST,
            Some("Enter an access token.".to_owned()),
        );
    }
    let caller = match state.store.authenticate(token).await {
        Ok(caller) => caller,
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            return login_page(
                StatusCode::UNAUTHORIZED,
                Some("That access token is unknown or was revoked.".to_owned()),
            )
        }
        Err(e) => return page::error(None, &e),
    };
    match state.store.create_session(&caller, session::LIFETIME).await {
        Ok(id) => page::secure(
            (
                [(header::SET_COOKIE, set_cookie(&id, &headers))],
                Redirect::to("/"),
            )
                .into_response(),
        ),
        Err(e) => page::error(None, &e),
    }
}

/// `POST /logout`: ends the session, here and in the browser.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return cross_site();
    }
    if let Some(id) = session::session_id(&headers) {
        if let Err(e) = state.store.end_session(&id).await {
            return page::error(None, &e);
        }
    }
    page::secure(
        (
            [(header::SET_COOKIE, clear_cookie())],
            Redirect::to("/login"),
        )
            .into_response(),
    )
}
