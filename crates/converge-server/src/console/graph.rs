//! The resource graph (`GET …/graph`) drawn as SVG: `layout-rs` lays it
//! out top to bottom — parents above their children, dependencies above
//! what depends on them (dashed), providers above what they manage
//! (dotted) — and renders it; each node links to its resource's page.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use super::page::{self, resource_href, stack_href, Nav};
use super::session::Viewer;
use crate::api::resources::{self, current_snapshot, EdgeKind, Graph};
use crate::api::AppState;
use crate::error::ApiError;

/// Larger graphs are not drawn (the layout's time grows quickly); the
/// API's JSON still has them.
const MAX_NODES: usize = 300;
/// The labels' font size, in pixels (the CSS gives `.a13` this size).
const FONT_SIZE: usize = 13;

#[derive(Template)]
#[template(path = "graph.html")]
struct GraphPage {
    nav: Option<Nav>,
    project: String,
    stack: String,
    href: String,
    nodes: usize,
    edges: usize,
    /// The drawing, or why there is none.
    svg: Result<String, String>,
}

pub(crate) async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(path): Path<(String, String, String)>,
) -> Response {
    let loaded = async {
        let stack = viewer.stack(&state, path).await?;
        let snapshot = current_snapshot(&state.store, &stack).await?;
        Ok::<_, ApiError>((stack, resources::graph(&snapshot)))
    }
    .await;
    let (stack, graph) = match loaded {
        Ok(l) => l,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let href = stack_href(&stack.organization, &stack.project, &stack.stack);
    let (nodes, edges) = (graph.nodes.len(), graph.edges.len());
    let svg = if nodes == 0 {
        Err("The stack has no resources.".to_owned())
    } else if nodes > MAX_NODES {
        Err(format!(
            "The graph has {nodes} resources, too many to draw here; \
             GET /api/stacks/…/graph has all of it."
        ))
    } else {
        let base = href.clone();
        // Layout is CPU work (and a panic in it must not take a worker).
        tokio::task::spawn_blocking(move || draw(&graph, &base))
            .await
            .map_err(|_| "The graph could not be laid out.".to_owned())
    };
    let page = GraphPage {
        nav: Some(viewer.nav()),
        project: stack.project,
        stack: stack.stack,
        href,
        nodes,
        edges,
        svg,
    };
    page::render(StatusCode::OK, &page)
}

/// The graph as an SVG element, for inlining in a page.
fn draw(graph: &Graph, stack_href: &str) -> String {
    let dir = Orientation::TopToBottom;
    let mut vg = VisualGraph::new(dir);
    let mut handles = HashMap::new();
    for node in &graph.nodes {
        let label = format!("{}\n{}", node.name, short_type(&node.type_token));
        let shape = ShapeKind::new_box(&label);
        let fill = if node
            .type_token
            .starts_with(converge_model::PROVIDER_TYPE_PREFIX)
        {
            "#f3e8ff"
        } else if node.custom {
            "#e0f2fe"
        } else {
            "#f1f5f9"
        };
        let look = StyleAttr::new(
            Color::fast("#334155"),
            1,
            Some(Color::fast(fill)),
            6,
            FONT_SIZE,
        );
        let size = get_shape_size(dir, &shape, FONT_SIZE, false);
        let properties = format!(
            "class=\"node\" data-href=\"{}\" data-urn=\"{}\"",
            attribute(&resource_href(stack_href, &node.urn)),
            attribute(&node.urn)
        );
        let element = Element::create_with_properties(shape, look, dir, size, properties);
        handles.insert(node.urn.as_str(), vg.add_node(element));
    }
    for edge in &graph.edges {
        let (Some(&to), Some(&from)) = (
            handles.get(edge.to.as_str()),
            handles.get(edge.from.as_str()),
        ) else {
            continue;
        };
        let (style, color, class) = match edge.kind {
            EdgeKind::Parent => (LineStyleKind::Normal, "#334155", "edge parent"),
            EdgeKind::Dependency => (LineStyleKind::Dashed, "#0369a1", "edge dependency"),
            EdgeKind::Provider => (LineStyleKind::Dotted, "#7e22ce", "edge provider"),
        };
        let look = StyleAttr::new(Color::fast(color), 1, None, 0, FONT_SIZE);
        let arrow = Arrow::with_properties(
            LineEndKind::None,
            LineEndKind::Arrow,
            style,
            "",
            &look,
            format!("class=\"{class}\""),
            &None,
            &None,
        );
        // Drawn from what is referred to down to what refers to it.
        vg.add_edge(arrow, to, from);
    }
    let mut svg = SVGWriter::new();
    vg.do_it(false, false, false, &mut svg);
    inline(&svg.finalize())
}

/// A type as a node shows it: `random:RandomPet` for
/// `random:index/randomPet:RandomPet`, `provider random` for
/// `pulumi:providers:random`, `stack` for the stack.
fn short_type(token: &str) -> String {
    if token == converge_model::STACK_TYPE {
        return "stack".to_owned();
    }
    if let Some(package) = token.strip_prefix(converge_model::PROVIDER_TYPE_PREFIX) {
        return format!("provider {package}");
    }
    match (token.split(':').next(), token.rsplit(':').next()) {
        (Some(package), Some(name)) if token.matches(':').count() == 2 => {
            format!("{package}:{name}")
        }
        _ => token.to_owned(),
    }
}

/// The SVG document as an element: without its XML declaration and its
/// `<style>` (the page's CSS styles it; the console allows no inline
/// style).
fn inline(document: &str) -> String {
    let body = match document.find("<svg") {
        Some(at) => &document[at..],
        None => document,
    };
    match (body.find("<style>"), body.find("</style>")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &body[..start], &body[end + "</style>".len()..])
        }
        _ => body.to_owned(),
    }
}

/// Text for a double-quoted attribute.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::{Edge, GraphNode};

    #[test]
    fn every_resource_is_a_linked_node_of_the_drawing() {
        let node = |urn: &str, name: &str, custom: bool| GraphNode {
            urn: urn.to_owned(),
            type_token: if custom {
                "random:index/randomPet:RandomPet"
            } else {
                "pulumi:pulumi:Stack"
            }
            .to_owned(),
            name: name.to_owned(),
            custom,
        };
        let stack = "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev";
        let pet = "urn:pulumi:dev::p::random:index/randomPet:RandomPet::pet<&\"x";
        let graph = Graph {
            nodes: vec![node(stack, "p-dev", false), node(pet, "pet<&\"x", true)],
            edges: vec![Edge {
                from: pet.to_owned(),
                to: stack.to_owned(),
                kind: EdgeKind::Parent,
            }],
        };
        let svg = draw(&graph, "/stacks/o/p/dev");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(!svg.contains("<style>") && !svg.contains("<?xml"));
        assert_eq!(svg.matches("class=\"node\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("class=\"edge parent\"").count(), 1, "{svg}");
        assert!(
            svg.contains("pet&lt;&amp;&quot;x"),
            "names are escaped: {svg}"
        );
        assert!(svg.contains("data-href=\"/stacks/o/p/dev/resources/urn%3Apulumi"));
    }

    #[test]
    fn types_are_shortened_for_labels() {
        assert_eq!(
            short_type("random:index/randomPet:RandomPet"),
            "random:RandomPet"
        );
        assert_eq!(short_type("pulumi:providers:random"), "provider random");
        assert_eq!(short_type("pulumi:pulumi:Stack"), "stack");
        assert_eq!(short_type("odd"), "odd");
    }
}
