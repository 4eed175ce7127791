//! The agent's native task list, replayed from its tool calls: `TodoWrite` (each call replaces
//! the whole todo list) and `TaskCreate` / `TaskUpdate` (one task at a time, by id). Claude Code
//! keeps the list outside the transcript; its calls are the only record a hook can read.

use serde_json::Value;

use crate::window::Window;

/// One task as the calls left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The task's id (`TaskCreate`), or `todo-<n>` for the n-th entry of the last `TodoWrite`.
    pub id: String,
    /// The subject (`TaskCreate`) or content (`TodoWrite`).
    pub subject: String,
    /// `pending`, `in_progress` or `completed` (any other status is kept as written).
    pub status: String,
}

impl Task {
    /// True while the task is not completed.
    pub fn is_open(&self) -> bool {
        self.status != "completed"
    }
}

/// The id a TaskCreate call's task got: the result's `toolUseResult.task.id`, else the
/// `Task #N` its text names, else `fallback` (Claude Code numbers tasks 1, 2, … per list).
fn created_id(result: Option<&crate::ToolResult>, fallback: usize) -> String {
    if let Some(id) = result.and_then(crate::ToolResult::task_id) {
        return id.to_owned();
    }
    let named = result.and_then(|r| {
        let text = r.content();
        let at = text.find("Task #")? + "Task #".len();
        let digits: String = text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (!digits.is_empty()).then_some(digits)
    });
    named.unwrap_or_else(|| fallback.to_string())
}

impl Window<'_> {
    /// The task list the window's own calls (subagents' never: each agent keeps its own todo
    /// list) leave behind, in creation order: the tasks of `TaskCreate`/`TaskUpdate` (a
    /// `deleted` status removes one), then the todos of the last `TodoWrite`. Calls whose
    /// result is an error changed nothing and are skipped.
    pub fn tasks(&self) -> Vec<Task> {
        let mut tasks: Vec<Task> = Vec::new();
        let mut todos: Vec<Task> = Vec::new();
        let mut created = 0;
        for call in self.without_subagents().tool_calls().iter() {
            if call.is_named("TodoWrite") {
                let Some(list) = call.input().get("todos").and_then(Value::as_array) else {
                    continue;
                };
                todos = list
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Task {
                        id: format!("todo-{}", i + 1),
                        subject: text(t, "content"),
                        status: text(t, "status"),
                    })
                    .collect();
            } else if call.is_named("TaskCreate") {
                created += 1;
                tasks.push(Task {
                    id: created_id(call.result(), created),
                    subject: call.input_str("subject").unwrap_or("").to_owned(),
                    status: "pending".into(),
                });
            } else if call.is_named("TaskUpdate") {
                let Some(id) = call.input().get("taskId").and_then(id_text) else {
                    continue;
                };
                let Some(at) = tasks.iter().position(|t| t.id == id) else {
                    continue;
                };
                match call.input_str("status") {
                    Some("deleted") => {
                        tasks.remove(at);
                        continue;
                    }
                    Some(s) => s.clone_into(&mut tasks[at].status),
                    None => {}
                }
                if let Some(s) = call.input_str("subject") {
                    s.clone_into(&mut tasks[at].subject);
                }
            }
        }
        tasks.extend(todos);
        tasks
    }

    /// The tasks of [`Window::tasks`] that are not completed.
    pub fn open_tasks(&self) -> Vec<Task> {
        self.tasks().into_iter().filter(Task::is_open).collect()
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// A task id as text: models send `"3"`, sometimes `3`.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::Transcript;
    use serde_json::{Value, json};

    fn call(id: &str, name: &str, input: Value) -> Value {
        json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}]}})
    }

    fn result(id: &str, text: &str, use_result: Value, error: bool) -> Value {
        json!({"type": "user", "toolUseResult": use_result, "message": {"content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": error}]}})
    }

    fn open(lines: &[Value]) -> Vec<(String, String)> {
        Transcript::from_values(lines)
            .session()
            .open_tasks()
            .into_iter()
            .map(|t| (t.id, t.status))
            .collect()
    }

    #[test]
    fn task_tools_are_replayed_by_id() {
        let prompt = json!({"type": "user", "message": {"content": "do it"}});
        let lines = [
            prompt,
            call(
                "c1",
                "TaskCreate",
                json!({"subject": "parse", "description": "d"}),
            ),
            result(
                "c1",
                "Task #1 created successfully: parse",
                json!({"task": {"id": "1", "subject": "parse"}}),
                false,
            ),
            // No structured result: the id comes from the text.
            call(
                "c2",
                "TaskCreate",
                json!({"subject": "lint", "description": "d"}),
            ),
            result(
                "c2",
                "Task #7 created successfully: lint",
                json!(null),
                false,
            ),
            // Neither: the third task created gets id 3.
            call(
                "c3",
                "TaskCreate",
                json!({"subject": "docs", "description": "d"}),
            ),
            result("c3", "created", json!(null), false),
            call(
                "u1",
                "TaskUpdate",
                json!({"taskId": "1", "status": "in_progress"}),
            ),
            result("u1", "ok", json!({}), false),
        ];
        assert_eq!(
            open(&lines),
            [
                ("1".into(), "in_progress".into()),
                ("7".into(), "pending".into()),
                ("3".into(), "pending".into())
            ]
        );
        let mut done = lines.to_vec();
        done.extend([
            call(
                "u2",
                "TaskUpdate",
                json!({"taskId": 1, "status": "completed"}),
            ),
            result("u2", "ok", json!({}), false),
            call(
                "u3",
                "TaskUpdate",
                json!({"taskId": "7", "status": "deleted"}),
            ),
            result("u3", "ok", json!({}), false),
            // A failed update changed nothing.
            call(
                "u4",
                "TaskUpdate",
                json!({"taskId": "3", "status": "completed"}),
            ),
            result("u4", "no such task", json!(null), true),
        ]);
        assert_eq!(open(&done), [("3".into(), "pending".into())]);
        done.extend([
            call(
                "u5",
                "TaskUpdate",
                json!({"taskId": "3", "status": "completed"}),
            ),
            result("u5", "ok", json!({}), false),
        ]);
        assert!(open(&done).is_empty());
    }

    #[test]
    fn the_last_todo_write_is_the_todo_list() {
        let todos = |statuses: &[&str]| {
            let list: Vec<Value> = statuses
                .iter()
                .map(|s| json!({"content": "x", "status": s, "activeForm": "x"}))
                .collect();
            json!({ "todos": list })
        };
        let lines = [
            call("t1", "TodoWrite", todos(&["pending", "pending"])),
            result("t1", "ok", json!({}), false),
            call("t2", "TodoWrite", todos(&["completed", "in_progress"])),
            result("t2", "ok", json!({}), false),
        ];
        assert_eq!(open(&lines), [("todo-2".into(), "in_progress".into())]);
        let mut all = lines.to_vec();
        all.extend([
            call("t3", "TodoWrite", todos(&["completed", "completed"])),
            result("t3", "ok", json!({}), false),
        ]);
        assert!(open(&all).is_empty());
        assert_eq!(Transcript::from_values(&all).session().tasks().len(), 2);
    }
}
