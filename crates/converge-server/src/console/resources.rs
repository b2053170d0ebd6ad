//! A stack's resources (`GET …/resources`, with its type/name filter) and
//! one resource (`GET …/resources/{urn}`): values with secrets masked,
//! its provider, parent, children, dependencies and dependents as links.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::page::{self, resource_href, stack_href, Nav};
use super::session::Viewer;
use super::stack::{output_rows, OutputRow};
use crate::api::resources::{self, current_snapshot, ResourceDetail};
use crate::api::AppState;
use crate::error::ApiError;

/// A link to a resource page.
struct Link {
    href: String,
    urn: String,
    name: String,
}

fn link(stack_href: &str, urn: &str) -> Link {
    Link {
        href: resource_href(stack_href, urn),
        name: converge_model::Urn::parse(urn)
            .map(|u| u.name().to_owned())
            .unwrap_or_else(|_| urn.to_owned()),
        urn: urn.to_owned(),
    }
}

struct Row {
    link: Link,
    type_token: String,
    id: String,
    flags: String,
}

#[derive(Template)]
#[template(path = "resources.html")]
struct ListPage {
    nav: Option<Nav>,
    project: String,
    stack: String,
    href: String,
    filter: String,
    total: usize,
    rows: Vec<Row>,
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    filter: Option<String>,
}

pub(crate) async fn list_page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(path): Path<(String, String, String)>,
    Query(query): Query<ListQuery>,
) -> Response {
    let loaded = async {
        let stack = viewer.stack(&state, path).await?;
        let snapshot = current_snapshot(&state.store, &stack).await?;
        Ok::<_, ApiError>((stack, snapshot))
    }
    .await;
    let (stack, snapshot) = match loaded {
        Ok(l) => l,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let href = stack_href(&stack.organization, &stack.project, &stack.stack);
    let filter = query.filter.unwrap_or_default();
    let rows = resources::list(&snapshot, Some(&filter))
        .into_iter()
        .map(|r| {
            let mut flags = Vec::new();
            if r.protect {
                flags.push("protected");
            }
            if r.delete {
                flags.push("replaced, to delete");
            }
            if r.external {
                flags.push("external");
            }
            Row {
                link: link(&href, &r.urn),
                id: r.id.unwrap_or_default(),
                type_token: r.type_token,
                flags: flags.join(", "),
            }
        })
        .collect();
    let page = ListPage {
        nav: Some(viewer.nav()),
        project: stack.project,
        stack: stack.stack,
        href,
        filter,
        total: snapshot.resources.len(),
        rows,
    };
    page::render(StatusCode::OK, &page)
}

/// A property dependency: the property and what it depends on.
struct PropertyDeps {
    property: String,
    links: Vec<Link>,
}

#[derive(Template)]
#[template(path = "resource.html")]
struct DetailPage {
    nav: Option<Nav>,
    project: String,
    stack: String,
    href: String,
    name: String,
    type_token: String,
    urn: String,
    id: String,
    custom: bool,
    protect: bool,
    provider: Option<Link>,
    provider_id: String,
    parent: Option<Link>,
    children: Vec<Link>,
    dependencies: Vec<Link>,
    property_dependencies: Vec<PropertyDeps>,
    dependents: Vec<Link>,
    deleted_with: Option<Link>,
    inputs: Vec<OutputRow>,
    outputs: Vec<OutputRow>,
    created: String,
    modified: String,
    init_errors: Vec<String>,
}

pub(crate) async fn detail_page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((org, project, stack, urn)): Path<(String, String, String, String)>,
) -> Response {
    let loaded = async {
        let stack = viewer.stack(&state, (org, project, stack)).await?;
        let snapshot = current_snapshot(&state.store, &stack).await?;
        let detail = resources::detail(&snapshot, &urn)?;
        Ok::<_, ApiError>((stack, detail))
    }
    .await;
    let (stack, d) = match loaded {
        Ok(l) => l,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let href = stack_href(&stack.organization, &stack.project, &stack.stack);
    let page = detail_page_of(viewer.nav(), stack.project, stack.stack, href, d);
    page::render(StatusCode::OK, &page)
}

fn detail_page_of(
    nav: Nav,
    project: String,
    stack: String,
    href: String,
    d: ResourceDetail,
) -> DetailPage {
    let links = |urns: &[String]| urns.iter().map(|u| link(&href, u)).collect::<Vec<_>>();
    DetailPage {
        nav: Some(nav),
        name: d.summary.name.clone(),
        type_token: d.summary.type_token.clone(),
        urn: d.summary.urn.clone(),
        id: d.summary.id.clone().unwrap_or_default(),
        custom: d.summary.custom,
        protect: d.summary.protect,
        provider: d.summary.provider.as_deref().map(|p| link(&href, p)),
        provider_id: d.provider_id.clone().unwrap_or_default(),
        parent: d.summary.parent.as_deref().map(|p| link(&href, p)),
        children: links(&d.children),
        dependencies: links(&d.dependencies),
        property_dependencies: d
            .property_dependencies
            .iter()
            .filter(|(_, urns)| !urns.is_empty())
            .map(|(property, urns)| PropertyDeps {
                property: property.clone(),
                links: links(urns),
            })
            .collect(),
        dependents: links(&d.dependents),
        deleted_with: d.deleted_with.as_deref().map(|u| link(&href, u)),
        inputs: output_rows(&d.inputs),
        outputs: output_rows(&d.outputs),
        created: d
            .created
            .as_deref()
            .map(super::stacks::readable_time)
            .unwrap_or_default(),
        modified: d
            .modified
            .as_deref()
            .map(super::stacks::readable_time)
            .unwrap_or_default(),
        init_errors: d.init_errors,
        project,
        stack,
        href,
    }
}
