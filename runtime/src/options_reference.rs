//! The options reference: every option of every connector and stage a registry holds, rendered
//! from the connectors' own declarations (`tributary options`, and `docs/options.md`, which a
//! test keeps equal to it).

use tributary_sdk::options::table::{render_markdown, render_text};
use tributary_sdk::{OptionSpec, Result};

use crate::registry::Registry;

/// The reference of `registry`'s sources, stages and sinks (all of them, or the connector
/// `only`), as Markdown or as plain text tables.
pub fn render(registry: &Registry, only: Option<&str>, markdown: bool) -> Result<String> {
    let table = |specs: &[OptionSpec]| {
        if markdown {
            render_markdown(specs)
        } else {
            render_text(specs)
        }
    };
    let heading = |kind: &str, name: &str| {
        if markdown {
            format!("\n## {kind} `{name}`\n\n")
        } else {
            format!("\n{kind} {name}\n")
        }
    };
    let wanted = |name: &str| only.is_none_or(|o| o.eq_ignore_ascii_case(name));
    let mut out = String::new();
    if markdown && only.is_none() {
        out.push_str(
            "# Options reference\n\nGenerated from the connectors' declarations by `tributary options --markdown` \
             (a test checks this file against it): name, type, default, allowed values, whether the value is a \
             secret, and what it does.\n",
        );
    }
    let mut found = false;
    for name in registry.source_names() {
        if wanted(name) {
            found = true;
            out.push_str(&heading("source", name));
            out.push_str(&table(&registry.source(name)?.options()));
        }
    }
    for name in registry.stage_names() {
        if wanted(name) {
            found = true;
            out.push_str(&heading("stage", name));
            out.push_str(&table(&registry.stage(name)?.options()));
        }
    }
    for name in registry.sink_names() {
        if wanted(name) {
            found = true;
            out.push_str(&heading("sink", name));
            out.push_str(&table(&registry.sink(name)?.options()));
        }
    }
    if let (Some(name), false) = (only, found) {
        // The registry's own message names the known connectors.
        registry.source(name)?;
    }
    Ok(out)
}
