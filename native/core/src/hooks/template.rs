//! Template variables of command hooks (`{{session}}`, `{{task_id}}`, ...): their values for an
//! event, and how they reach a process without ever being spliced into a shell string.
//!
//! Without a shell, a variable is substituted inside an argv element: the value is one argument, so a
//! file name like `a; rm -rf ~` stays a file name. With `shell: true`, `{{name}}` in the script becomes
//! `"${CHOKEPOINT_NAME}"` and the value travels in that environment variable: the shell expands it as
//! data, never parses it as code (on Windows the script is cmd's, and `{{name}}` becomes `"!CHOKEPOINT_NAME!"`,
//! expanded after cmd has parsed the line). Every variable is also exported to the environment in both modes.

use crate::model::event::Event;

/// The variables a hook may use, and the environment variable each is exported as.
pub const VARIABLES: [(&str, &str); 8] = [
    ("session", "CHOKEPOINT_SESSION"),
    ("iteration", "CHOKEPOINT_ITERATION"),
    ("task_id", "CHOKEPOINT_TASK_ID"),
    ("task_content", "CHOKEPOINT_TASK_CONTENT"),
    ("error", "CHOKEPOINT_ERROR"),
    ("tool", "CHOKEPOINT_TOOL"),
    ("path", "CHOKEPOINT_PATH"),
    ("intent_id", "CHOKEPOINT_INTENT_ID"),
];

/// The names of the `{{...}}` placeholders in a text that are not known variables.
pub fn unknown_variables(text: &str) -> Vec<String> {
    placeholders(text).filter(|name| !VARIABLES.iter().any(|(v, _)| v == name)).map(str::to_owned).collect()
}

fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.split("{{").skip(1).filter_map(|rest| rest.split_once("}}").map(|(name, _)| name.trim()))
}

/// The value of every variable for one event (empty where the event has none).
pub fn values(event: &Event) -> Vec<(&'static str, &'static str, String)> {
    let subject_str = |key: &str| event.subject.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    VARIABLES
        .iter()
        .map(|&(name, env)| {
            let value = match name {
                "session" => event.ids.session.clone(),
                "iteration" => event.ids.turn.map(|t| t.to_string()),
                "task_id" => event.ids.task.clone(),
                "task_content" => subject_str("task_content").or_else(|| subject_str("prompt")),
                "error" => subject_str("error").or_else(|| subject_str("message")),
                "tool" => event.tool.clone(),
                "path" => event.paths.first().cloned(),
                "intent_id" => event.ids.intent.clone(),
                _ => None,
            };
            (name, env, value.unwrap_or_default())
        })
        .collect()
}

/// Substitutes variables inside one argv element (no shell will parse the result).
pub fn expand_arg(arg: &str, values: &[(&'static str, &'static str, String)]) -> String {
    replace_placeholders(arg, |name| values.iter().find(|(n, _, _)| *n == name).map(|(_, _, v)| v.clone()))
}

/// Rewrites a shell script so every variable is a quoted reference to its environment variable.
pub fn quote_for_shell(script: &str) -> String {
    replace_placeholders(script, |name| VARIABLES.iter().find(|(n, _)| *n == name).map(|(_, env)| format!("\"${{{env}}}\"")))
}

/// [`quote_for_shell`] for Windows' cmd, run with delayed expansion (`/v:on`): `{{name}}` becomes
/// `"!CHOKEPOINT_NAME!"`. cmd expands `!…!` after it has read the line's operators, so a value's `&`,
/// `|`, `>` or `%` is data, never a second command; `%…%` would be expanded before, and is not used.
pub fn quote_for_cmd(script: &str) -> String {
    replace_placeholders(script, |name| VARIABLES.iter().find(|(n, _)| *n == name).map(|(_, env)| format!("\"!{env}!\"")))
}

fn replace_placeholders(text: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => match value(after[..end].trim()) {
                Some(v) => {
                    out.push_str(&v);
                    rest = &after[end + 2..];
                }
                None => {
                    out.push_str("{{");
                    rest = after;
                }
            },
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::{Event, EventKind};

    #[test]
    fn argv_substitution_keeps_a_value_one_argument() {
        let mut e = Event::new(EventKind::TaskComplete);
        e.ids.task = Some("T-1".into());
        e.subject = serde_json::json!({ "task_content": "fix it\"; rm -rf ~; echo \"" });
        let v = values(&e);
        assert_eq!(expand_arg("--task={{task_id}}", &v), "--task=T-1");
        assert_eq!(expand_arg("{{ task_content }}", &v), "fix it\"; rm -rf ~; echo \"");
        assert_eq!(expand_arg("{{nope}} {{", &v), "{{nope}} {{");
    }

    #[test]
    fn shell_scripts_get_quoted_references_not_values() {
        assert_eq!(quote_for_shell("echo {{task_content}} > {{path}}"), "echo \"${CHOKEPOINT_TASK_CONTENT}\" > \"${CHOKEPOINT_PATH}\"");
    }

    #[test]
    fn unknown_variables_are_reported() {
        assert_eq!(unknown_variables("{{session}} {{sesion}} {{ tool }}"), ["sesion"]);
    }
}
