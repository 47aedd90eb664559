//! ValidatingAdmissionPolicies, offline: the policies and bindings of `lint --policy FILE`
//! and of the linted file itself, evaluated against each object as the API server's admission
//! evaluates them on create. A policy takes effect through a binding; both match by resource
//! rules (the plural of the kind), operations (`CREATE`), object and namespace selectors
//! (a namespace's labels from a Namespace in the same files, and its automatic
//! `kubernetes.io/metadata.name`), then `matchConditions`; `variables`, `params` (from a
//! binding's `paramRef`, found among the same files) and `validations` follow, with the
//! binding's `validationActions`. CEL is the `cel` crate's (`crate::crd::rules`), with
//! Kubernetes' libraries; an expression that calls what is not here is left unevaluated, not
//! guessed. One that reads `authorizer` (or a variable that does) needs the cluster's
//! authorizer, whose answers cannot be had offline: it is skipped, and a note says so once
//! per validation of a policy, on the first object the policy is evaluated on.

use crate::crd::rules::{compile, compile_error, evaluate, to_cel};
use crate::diag::Severity;
use crate::kube::{Document, Finding};
use crate::lint::api::{Selector, labels_of};
use crate::yaml::{Node, Step, Value, key_text};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

const GROUP: &str = "admissionregistration.k8s.io/v1";

/// The policies, bindings, possible params and namespaces of a run.
#[derive(Default)]
pub struct Policies {
    policies: Vec<Policy>,
    bindings: Vec<Binding>,
    /// Every other object of the policy files, for `paramRef`s.
    objects: Vec<Node>,
    /// Namespaces' labels, by name.
    namespaces: HashMap<String, Node>,
}

impl std::fmt::Debug for Policies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.bindings
                    .iter()
                    .map(|b| format!("{} -> {}", b.name, b.policy)),
            )
            .finish()
    }
}

struct Policy {
    name: String,
    matching: Match,
    param_kind: Option<(String, String)>,
    conditions: Vec<(String, cel::Program)>,
    variables: Vec<(String, cel::Program)>,
    validations: Vec<Validation>,
    fail_on_error: bool,
    /// The index of the first `matchConditions` entry that reads `authorizer`, and whether
    /// the note saying so was given.
    condition_authorizer: Option<(usize, AtomicBool)>,
    /// The names of the variables that read `authorizer`, directly or through another.
    authorizer_variables: HashSet<String>,
}

struct Validation {
    /// Its index in `spec.validations`.
    index: usize,
    /// Reads `authorizer` (or a variable that does), and whether the note saying so was given.
    authorizer: Option<AtomicBool>,
    expression: String,
    program: cel::Program,
    message: Option<String>,
    message_expression: Option<cel::Program>,
    reason: Option<String>,
}

struct Binding {
    name: String,
    policy: String,
    matching: Option<Match>,
    param_ref: Option<ParamRef>,
    actions: Vec<String>,
}

struct ParamRef {
    name: Option<String>,
    namespace: Option<String>,
    selector: Option<Selector>,
    deny_when_missing: bool,
}

#[derive(Default)]
struct Match {
    rules: Vec<ResourceRule>,
    exclude: Vec<ResourceRule>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
}

struct ResourceRule {
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
    names: Vec<String>,
}

fn text(node: Option<&Node>) -> Option<String> {
    match node.map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

fn strings(node: Option<&Node>) -> Vec<String> {
    match node.map(|n| &n.value) {
        Some(Value::Seq(items)) => items.iter().map(|i| key_text(i).into_owned()).collect(),
        _ => Vec::new(),
    }
}

fn seq(node: Option<&Node>) -> &[Node] {
    match node.map(|n| &n.value) {
        Some(Value::Seq(items)) => items,
        _ => &[],
    }
}

fn at<'a>(node: &'a Node, path: &[&str]) -> Option<&'a Node> {
    path.iter().try_fold(node, |n, k| n.get(k))
}

impl ResourceRule {
    fn read(node: &Node) -> ResourceRule {
        ResourceRule {
            groups: strings(node.get("apiGroups")),
            versions: strings(node.get("apiVersions")),
            resources: strings(node.get("resources")),
            operations: strings(node.get("operations")),
            names: strings(node.get("resourceNames")),
        }
    }

    fn matches(&self, group: &str, version: &str, resource: &str, name: &str) -> bool {
        let any = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        any(&self.groups, group)
            && any(&self.versions, version)
            && self
                .resources
                .iter()
                .any(|r| r == "*" || r == "*/*" || r == resource)
            && any(&self.operations, "CREATE")
            && (self.names.is_empty() || self.names.iter().any(|n| n == name))
    }
}

impl Match {
    fn read(node: Option<&Node>) -> Option<Match> {
        let node = node?;
        Some(Match {
            rules: seq(node.get("resourceRules"))
                .iter()
                .map(ResourceRule::read)
                .collect(),
            exclude: seq(node.get("excludeResourceRules"))
                .iter()
                .map(ResourceRule::read)
                .collect(),
            namespace_selector: Selector::read(node.get("namespaceSelector")),
            object_selector: Selector::read(node.get("objectSelector")),
        })
    }
}

/// The resource of a kind, as the API server's REST mapping names it (`Ingress` ->
/// `ingresses`, `NetworkPolicy` -> `networkpolicies`).
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => lower,
        _ if lower.ends_with('y') && !lower.ends_with("ey") => {
            format!("{}ies", &lower[..lower.len() - 1])
        }
        _ if lower.ends_with('s') || lower.ends_with("ch") || lower.ends_with('x') => {
            format!("{lower}es")
        }
        _ => format!("{lower}s"),
    }
}

impl Policy {
    /// A policy document; `Err` lists its expressions that do not compile, with their paths.
    fn read(node: &Node) -> Result<Policy, Vec<(Vec<Step>, String)>> {
        let spec = node.get("spec");
        let mut errors = Vec::new();
        let mut program = |path: Vec<Step>, expression: &str| match compile(expression) {
            Ok(p) => Some(p),
            Err(e) => {
                errors.push((path, compile_error(expression, &e)));
                None
            }
        };
        let path = |list: &str, i: usize, field: &str| {
            vec![
                Step::Key("spec".into()),
                Step::Key(list.to_string().into()),
                Step::Index(i),
                Step::Key(field.to_string().into()),
            ]
        };
        let named =
            |list: &str, program: &mut dyn FnMut(Vec<Step>, &str) -> Option<cel::Program>| {
                seq(spec.and_then(|s| s.get(list)))
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        let expression = text(c.get("expression"))?;
                        let compiled = program(path(list, i, "expression"), &expression)?;
                        Some((text(c.get("name")).unwrap_or_default(), compiled))
                    })
                    .collect::<Vec<_>>()
            };
        let conditions = named("matchConditions", &mut program);
        let variables = named("variables", &mut program);
        let mut validations = Vec::new();
        for (i, v) in seq(spec.and_then(|s| s.get("validations")))
            .iter()
            .enumerate()
        {
            let Some(expression) = text(v.get("expression")) else {
                continue;
            };
            let compiled = program(path("validations", i, "expression"), &expression);
            let message_expression = text(v.get("messageExpression"))
                .and_then(|m| program(path("validations", i, "messageExpression"), &m));
            if let Some(compiled) = compiled {
                validations.push(Validation {
                    index: i,
                    authorizer: None,
                    expression,
                    program: compiled,
                    message: text(v.get("message")),
                    message_expression,
                    reason: text(v.get("reason")),
                });
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let param_kind = spec.and_then(|s| s.get("paramKind")).map(|p| {
            (
                text(p.get("apiVersion")).unwrap_or_default(),
                text(p.get("kind")).unwrap_or_default(),
            )
        });
        // The variables that read the authorizer, through each other in their order.
        let texts = |list: &str| -> Vec<String> {
            seq(spec.and_then(|s| s.get(list)))
                .iter()
                .filter_map(|c| text(c.get("expression")))
                .collect()
        };
        let mut authorizer_variables = HashSet::new();
        for ((name, program), source) in variables.iter().zip(texts("variables")) {
            if reads_authorizer(program, &source, &authorizer_variables) {
                authorizer_variables.insert(name.clone());
            }
        }
        for v in &mut validations {
            if reads_authorizer(&v.program, &v.expression, &authorizer_variables) {
                v.authorizer = Some(AtomicBool::new(false));
            }
        }
        let condition_authorizer = conditions
            .iter()
            .zip(texts("matchConditions"))
            .position(|((_, program), source)| {
                reads_authorizer(program, &source, &authorizer_variables)
            })
            .map(|i| (i, AtomicBool::new(false)));
        Ok(Policy {
            name: text(at(node, &["metadata", "name"])).unwrap_or_default(),
            matching: Match::read(spec.and_then(|s| s.get("matchConstraints"))).unwrap_or_default(),
            param_kind,
            conditions,
            variables,
            validations,
            fail_on_error: text(spec.and_then(|s| s.get("failurePolicy"))).as_deref()
                != Some("Ignore"),
            condition_authorizer,
            authorizer_variables,
        })
    }
}

/// Whether an expression (`program`, compiled from `text`) reads `authorizer`, or one of these
/// variables (`variables.name`).
fn reads_authorizer(program: &cel::Program, text: &str, variables: &HashSet<String>) -> bool {
    let references = program.references();
    if references.has_variable("authorizer") {
        return true;
    }
    references.has_variable("variables") && {
        variables.iter().any(|name| {
            let needle = format!("variables.{name}");
            text.match_indices(&needle).any(|(at, _)| {
                !text[at + needle.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        })
    }
}

/// What is wrong in a ValidatingAdmissionPolicy itself: expressions that do not compile (the
/// API server refuses the policy).
pub fn flaws(doc: &Document) -> Vec<Finding> {
    if (doc.api_version, doc.kind) != (GROUP, "ValidatingAdmissionPolicy") {
        return Vec::new();
    }
    match Policy::read(doc.root) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|(path, message)| Finding {
                span: doc
                    .root
                    .lookup(&path)
                    .map_or(doc.root.span.clone(), |(_, n)| n.span.clone()),
                message: format!("{}: {message}", crate::yaml::display_path(&path)),
                help: None,
                path,
            })
            .collect(),
    }
}

impl Policies {
    /// The policies, bindings and other objects of `lint --policy` files. `Err` names the file,
    /// line and column of what cannot be read: a file that is not YAML, a policy whose
    /// expression does not compile, files with no ValidatingAdmissionPolicy at all.
    pub fn read(sources: &[crate::source::Source]) -> Result<Policies, String> {
        let mut policies = Policies::default();
        for source in sources {
            let stream = crate::yaml::parse_file(source)?;
            for node in &stream.documents {
                let is_policy = text(node.get("apiVersion")).as_deref() == Some(GROUP)
                    && text(node.get("kind")).as_deref() == Some("ValidatingAdmissionPolicy");
                if is_policy && let Err(errors) = Policy::read(node) {
                    let (path, why) = &errors[0];
                    let span = node
                        .lookup(path)
                        .map_or(node.span.clone(), |(_, n)| n.span.clone());
                    let (line, col) = source.line_col(span.start);
                    return Err(format!(
                        "{}:{line}:{col}: {}: {why}",
                        source.name(),
                        crate::yaml::display_path(path)
                    ));
                }
            }
            policies.add(stream.documents);
        }
        if policies.policies.is_empty() {
            return Err(format!(
                "no ValidatingAdmissionPolicy in {}",
                sources
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(policies)
    }

    /// Take the policies, bindings, Namespaces and other objects of these documents.
    pub fn add(&mut self, documents: impl IntoIterator<Item = Node>) {
        for node in documents {
            let api_version = text(node.get("apiVersion")).unwrap_or_default();
            let kind = text(node.get("kind")).unwrap_or_default();
            match (api_version.as_str(), kind.as_str()) {
                (GROUP, "ValidatingAdmissionPolicy") => {
                    // One that does not compile is reported on itself ([`flaws`]) and admits
                    // nothing here, as the API server would not have stored it.
                    if let Ok(policy) = Policy::read(&node) {
                        self.policies.push(policy);
                    }
                }
                (GROUP, "ValidatingAdmissionPolicyBinding") => {
                    let spec = node.get("spec");
                    let param_ref = spec.and_then(|s| s.get("paramRef")).map(|p| ParamRef {
                        name: text(p.get("name")),
                        namespace: text(p.get("namespace")),
                        selector: Selector::read(p.get("selector")),
                        deny_when_missing: text(p.get("parameterNotFoundAction")).as_deref()
                            != Some("Allow"),
                    });
                    self.bindings.push(Binding {
                        name: text(at(&node, &["metadata", "name"])).unwrap_or_default(),
                        policy: text(spec.and_then(|s| s.get("policyName"))).unwrap_or_default(),
                        matching: Match::read(spec.and_then(|s| s.get("matchResources"))),
                        param_ref,
                        actions: strings(spec.and_then(|s| s.get("validationActions"))),
                    });
                }
                ("v1", "Namespace") => {
                    if let Some(name) = text(at(&node, &["metadata", "name"])) {
                        self.namespaces.insert(name, node);
                    }
                }
                _ => self.objects.push(node),
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// What the policies bound to this object's resource say of it on create, each with its
    /// severity: an error when a binding denies, a warning when it only warns (its
    /// `validationActions` hold `Warn` and no `Deny`), a note for a validation that needs the
    /// cluster's authorizer (said once per validation of a policy).
    pub fn check(&self, doc: &Document, more: Option<&Policies>) -> Vec<(Finding, Severity)> {
        let mut found = Vec::new();
        let bindings = self
            .bindings
            .iter()
            .chain(more.map(|m| &m.bindings[..]).unwrap_or_default());
        for binding in bindings {
            let policy = self
                .policies
                .iter()
                .chain(more.map(|m| &m.policies[..]).unwrap_or_default())
                .find(|p| p.name == binding.policy);
            let Some(policy) = policy else { continue };
            if binding.actions.iter().all(|a| a == "Audit") {
                continue;
            }
            if !self.matches(&policy.matching, doc, more, false)
                || binding
                    .matching
                    .as_ref()
                    .is_some_and(|m| !self.matches(m, doc, more, true))
            {
                continue;
            }
            for params in self.params(policy, binding, doc, more) {
                let mut notes = Vec::new();
                let denied = self.evaluate(policy, doc, params, more, &mut notes);
                for note in notes {
                    let finding = Finding {
                        message: format!("ValidatingAdmissionPolicy '{}': {note}", policy.name),
                        help: Some(
                            "check it against the cluster (`kubectl apply --dry-run=server`)"
                                .into(),
                        ),
                        path: Vec::new(),
                        span: doc.root.span.clone(),
                    };
                    found.push((finding, Severity::Note));
                }
                if let Some(message) = denied {
                    let warn_only = !binding.actions.iter().any(|a| a == "Deny");
                    let finding = Finding {
                        message: format!(
                            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}{}",
                            policy.name,
                            binding.name,
                            if warn_only {
                                " (validationActions: Warn: admitted with a warning)"
                            } else {
                                ""
                            }
                        ),
                        help: None,
                        path: Vec::new(),
                        span: doc.root.span.clone(),
                    };
                    let severity = if warn_only {
                        Severity::Warning
                    } else {
                        Severity::Error
                    };
                    found.push((finding, severity));
                }
            }
        }
        found
    }

    fn namespace<'a>(&'a self, name: &str, more: Option<&'a Policies>) -> Option<&'a Node> {
        self.namespaces
            .get(name)
            .or_else(|| more.and_then(|m| m.namespaces.get(name)))
    }

    fn selected(&self, m: &Match, doc: &Document, more: Option<&Policies>) -> bool {
        if let Some(selector) = &m.object_selector
            && !selector.matches(&labels_of(doc.root.get("metadata")))
        {
            return false;
        }
        let Some(selector) = m.namespace_selector.as_ref().filter(|s| !s.is_empty()) else {
            return true;
        };
        // A Namespace is matched by its own labels; an object that names no namespace lands
        // in one only `kubectl -n` knows, so a selector with requirements is not assumed.
        let ns = match (doc.kind, doc.namespace) {
            ("Namespace", _) => doc.name,
            (_, Some(ns)) => ns,
            (_, None) => return false,
        };
        let mut labels = labels_of(self.namespace(ns, more).and_then(|n| n.get("metadata")));
        labels.insert("kubernetes.io/metadata.name".into(), ns.into());
        selector.matches(&labels)
    }

    fn resource(doc: &Document) -> (String, String, String) {
        let (group, version) = doc
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", doc.api_version));
        (group.into(), version.into(), plural(doc.kind))
    }

    /// Whether `m` takes the object. A policy's `matchConstraints` must name its resource; a
    /// binding's `matchResources` (`narrows`) only narrows its policy's, so no rules keep all.
    fn matches(&self, m: &Match, doc: &Document, more: Option<&Policies>, narrows: bool) -> bool {
        let (group, version, resource) = Self::resource(doc);
        let hit = |rules: &[ResourceRule]| {
            rules
                .iter()
                .any(|r| r.matches(&group, &version, &resource, doc.name))
        };
        ((narrows && m.rules.is_empty()) || hit(&m.rules))
            && !hit(&m.exclude)
            && self.selected(m, doc, more)
    }

    /// The param objects a binding gives its policy: `[None]` when the policy takes none,
    /// empty when they are missing and the binding allows that.
    fn params<'a>(
        &'a self,
        policy: &Policy,
        binding: &Binding,
        doc: &Document,
        more: Option<&'a Policies>,
    ) -> Vec<Option<&'a Node>> {
        let (Some((api_version, kind)), Some(param_ref)) = (&policy.param_kind, &binding.param_ref)
        else {
            return vec![None];
        };
        let namespace = param_ref.namespace.as_deref().or(doc.namespace);
        let found: Vec<Option<&Node>> = self
            .objects
            .iter()
            .chain(more.map(|m| &m.objects[..]).unwrap_or_default())
            .filter(|o| {
                text(o.get("apiVersion")).as_deref() == Some(api_version)
                    && text(o.get("kind")).as_deref() == Some(kind)
                    && text(at(o, &["metadata", "namespace"])).as_deref() == namespace
            })
            .filter(|o| match (&param_ref.name, &param_ref.selector) {
                (Some(name), _) => text(at(o, &["metadata", "name"])).as_ref() == Some(name),
                (None, Some(selector)) => selector.matches(&labels_of(o.get("metadata"))),
                (None, None) => false,
            })
            .map(Some)
            .collect();
        if found.is_empty() && param_ref.deny_when_missing {
            // Evaluated with a missing param: the API server denies ("no params found").
            return vec![None];
        }
        found
    }

    /// The first validation that fails, in the API server's words; `None` when the object
    /// is admitted (or the policy cannot be evaluated here). What needs the cluster's
    /// authorizer is skipped, and said in `notes` the first time.
    fn evaluate(
        &self,
        policy: &Policy,
        doc: &Document,
        params: Option<&Node>,
        more: Option<&Policies>,
        notes: &mut Vec<String>,
    ) -> Option<String> {
        /// Whether the note was not given yet (and is now).
        fn first(noted: &AtomicBool) -> bool {
            !noted.swap(true, Ordering::Relaxed)
        }
        if let Some((i, noted)) = &policy.condition_authorizer {
            if first(noted) {
                notes.push(format!(
                    "spec.matchConditions[{i}] needs the cluster's authorizer, which is not here \
                     offline: the policy is not evaluated"
                ));
            }
            return None;
        }
        if policy.param_kind.is_some() && params.is_none() {
            return Some(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        let (group, version, resource) = Self::resource(doc);
        let request = serde_json::json!({
            "operation": "CREATE",
            "name": doc.name,
            "namespace": doc.namespace.unwrap_or_default(),
            "kind": {"group": group, "version": version, "kind": doc.kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "userInfo": {},
            "dryRun": false,
        });
        let namespace_object = doc
            .namespace
            .and_then(|ns| self.namespace(ns, more))
            .map_or(cel::Value::Null, to_cel);
        let mut bound = vec![
            ("object", to_cel(doc.root)),
            ("oldObject", cel::Value::Null),
            ("request", json_to_cel(&request)),
            ("params", params.map_or(cel::Value::Null, to_cel)),
            ("namespaceObject", namespace_object),
        ];
        for (_, condition) in &policy.conditions {
            match evaluate(condition, &bound) {
                Ok(Some(cel::Value::Bool(true))) => {}
                Ok(Some(cel::Value::Bool(false))) => return None,
                Ok(_) => return None,
                Err(e) if policy.fail_on_error => {
                    return Some(format!("expression evaluation error: {e}"));
                }
                Err(_) => return None,
            }
        }
        // The policy applies to the object: what of it cannot be evaluated is said.
        for v in &policy.validations {
            if let Some(noted) = &v.authorizer
                && first(noted)
            {
                notes.push(format!(
                    "spec.validations[{}] is not evaluated: its expression needs the cluster's \
                     authorizer, which is not here offline",
                    v.index
                ));
            }
        }
        let mut variables = HashMap::new();
        for (name, program) in &policy.variables {
            if policy.authorizer_variables.contains(name) {
                continue;
            }
            let with = [bound.clone(), vec![("variables", cel_map(&variables))]].concat();
            match evaluate(program, &with) {
                Ok(Some(value)) => {
                    variables.insert(name.clone(), value);
                }
                Ok(None) => return None,
                Err(e) if policy.fail_on_error => {
                    return Some(format!("expression evaluation error: {e}"));
                }
                Err(_) => return None,
            }
        }
        bound.push(("variables", cel_map(&variables)));
        for v in &policy.validations {
            if v.authorizer.is_some() {
                continue;
            }
            match evaluate(&v.program, &bound) {
                Ok(Some(cel::Value::Bool(true))) => {}
                Ok(Some(cel::Value::Bool(false))) => {
                    let message = v
                        .message_expression
                        .as_ref()
                        .and_then(|m| match evaluate(m, &bound) {
                            Ok(Some(cel::Value::String(s))) if !s.trim().is_empty() => {
                                Some(s.to_string())
                            }
                            _ => None,
                        })
                        .or_else(|| v.message.clone())
                        .unwrap_or_else(|| format!("failed expression: {}", v.expression));
                    let reason = match v.reason.as_deref() {
                        Some(r) if r != "Invalid" => format!(" (reason: {r})"),
                        _ => String::new(),
                    };
                    return Some(format!("{message}{reason}"));
                }
                Ok(_) => {}
                Err(e) if policy.fail_on_error => {
                    return Some(format!(
                        "expression '{}' resulted in error: {e}",
                        v.expression
                    ));
                }
                Err(_) => {}
            }
        }
        None
    }
}

fn cel_map(values: &HashMap<String, cel::Value>) -> cel::Value {
    let map: HashMap<cel::objects::Key, cel::Value> = values
        .iter()
        .map(|(k, v)| {
            (
                cel::objects::Key::String(std::sync::Arc::new(k.clone())),
                v.clone(),
            )
        })
        .collect();
    cel::Value::Map(cel::objects::Map {
        map: std::sync::Arc::new(map),
    })
}

fn json_to_cel(value: &serde_json::Value) -> cel::Value {
    use serde_json::Value as J;
    match value {
        J::Null => cel::Value::Null,
        J::Bool(b) => cel::Value::Bool(*b),
        J::Number(n) => n.as_i64().map_or_else(
            || cel::Value::Float(n.as_f64().unwrap_or(0.0)),
            cel::Value::Int,
        ),
        J::String(s) => cel::Value::String(std::sync::Arc::new(s.clone())),
        J::Array(items) => {
            cel::Value::List(std::sync::Arc::new(items.iter().map(json_to_cel).collect()))
        }
        J::Object(entries) => cel_map(
            &entries
                .iter()
                .map(|(k, v)| (k.clone(), json_to_cel(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn kinds_map_to_their_resources() {
        for (kind, resource) in [
            ("Deployment", "deployments"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("Endpoints", "endpoints"),
            ("Job", "jobs"),
            ("Pod", "pods"),
        ] {
            assert_eq!(plural(kind), resource);
        }
    }
}
