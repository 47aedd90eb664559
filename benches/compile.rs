//! Compiling one typical request in-process: load, check, plan, render, verify.
//! Target: under 200 µs, with the schema validators and templates compiled once, and a
//! 16-node request within 1.5x of the single-node one.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tao_k8s::plan::Options;
use tao_k8s::render::Templates;
use tao_k8s::source::Source;

fn compile(c: &mut Criterion) {
    let opts = Options::default();
    for (name, path) in [
        ("example (args mode)", "examples/dino-train.yaml"),
        (
            "config mode, inline spec",
            "fixtures/requests/valid/config-inline.yaml",
        ),
        (
            "16 nodes (Service + Indexed Job)",
            "fixtures/requests/valid/multi-node-16-kueue.yaml",
        ),
    ] {
        let text = std::fs::read_to_string(path).unwrap();
        let source = Source::new(path, text);
        // Warm the lazily compiled validators and templates, as a long-lived process would.
        tao_k8s::compile(&source, &opts, Templates::embedded()).unwrap();
        c.bench_function(&format!("compile {name}"), |b| {
            b.iter(|| tao_k8s::compile(black_box(&source), &opts, Templates::embedded()).unwrap())
        });
    }
}

criterion_group!(benches, compile);
criterion_main!(benches);
