//! Compiling one typical request in-process: load, check, plan, render, verify.
//! Target: under 200 µs, with the schema validators and templates compiled once, and a
//! 16-node request within 1.5x of the single-node one. Then a batch of requests, as
//! `render DIR` compiles them, and lint per document of a stream of rendered objects.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
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

/// 100 requests, the example with its name varied, compiled in turn as `render DIR` does.
fn batch(c: &mut Criterion) {
    let opts = Options::default();
    let text = std::fs::read_to_string("examples/dino-train.yaml").unwrap();
    let sources: Vec<Source> = (0..100)
        .map(|i| {
            let name = format!("run-{i:03}");
            Source::new(name.clone(), text.replace("dino-train-coco", &name))
        })
        .collect();
    let mut group = c.benchmark_group("batch");
    group.throughput(Throughput::Elements(sources.len() as u64));
    group.bench_function("compile 100 requests", |b| {
        b.iter(|| {
            for source in &sources {
                black_box(tao_k8s::compile(source, &opts, Templates::embedded()).unwrap());
            }
        })
    });
    group.finish();
}

/// Lint per document: a stream of the objects the fixtures render (Jobs, Services,
/// ConfigMaps), every rule.
fn lint(c: &mut Criterion) {
    let opts = Options::default();
    let mut stream = String::new();
    let mut documents = 0;
    for entry in std::fs::read_dir("fixtures/requests/valid").unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() || path.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let source = Source::new(path.display().to_string(), text);
        if let Ok(compiled) = tao_k8s::compile(&source, &opts, Templates::embedded()) {
            stream.push_str(&compiled.yaml);
            documents += compiled.documents.len();
        }
    }
    let source = Source::new("stream.yaml", stream);
    let selection = tao_k8s::lint::Selection::default();
    let mut group = c.benchmark_group("lint");
    group.throughput(Throughput::Elements(documents as u64));
    group.bench_function(format!("lint {documents} rendered documents"), |b| {
        b.iter(|| black_box(tao_k8s::lint::lint(&source, &selection).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, compile, batch, lint);
criterion_main!(benches);
