//! The judges' specialties checked when a project loads: every LLM hook's `specialty` must be
//! one the project's `config.toml` defines (or a builtin one), and the table read there is
//! handed to the judges ([`set_specialties`]). It reads the config (packs) and points at the
//! hook file's line (the format), so it lives above both rather than in the LLM kinds.

use capt_hook_kinds::llm::{Specialties, Specialty, set_specialties};
use capt_hook_toml::loader::{LoadError, backend_of};

/// Reads the project's specialties from `hooks_dir`'s `config.toml`, records them for its
/// judges, and returns a load error for each hook of `registry` naming one it does not have.
pub fn check_specialties(
    root: &std::path::Path,
    hooks_dir: &std::path::Path,
    registry: &capt_hook_engine::registry::Registry,
) -> Vec<LoadError> {
    let config = capt_hook_packs::read_config(hooks_dir);
    check_specialties_in(root, hooks_dir, &config, registry)
}

/// [`check_specialties`] with `config.toml` already read (the packs read it).
pub fn check_specialties_in(
    root: &std::path::Path,
    hooks_dir: &std::path::Path,
    config: &Result<capt_hook_packs::Config, LoadError>,
    registry: &capt_hook_engine::registry::Registry,
) -> Vec<LoadError> {
    let config_file = hooks_dir.join(capt_hook_toml::loader::CONFIG_FILE);
    let mut errors = Vec::new();
    let (table, unread) = match config {
        Ok(c) => {
            let mut configured = Vec::new();
            for (name, sp) in c.llm.specialties.clone() {
                let models = match sp.models {
                    None => None,
                    Some(m) => match <[String; 3]>::try_from(m.get_ref().clone()) {
                        Ok(m) if m.iter().all(|n| !n.trim().is_empty()) => Some(m),
                        _ => {
                            // The file is read again only to name the list's line.
                            let (line, column) = std::fs::read_to_string(&config_file)
                                .map(|text| capt_hook_packs::line_col(&text, m.span().start))
                                .unwrap_or((0, 0));
                            errors.push(LoadError {
                                file: config_file.clone(),
                                line,
                                column,
                                field: Some(format!("llm.specialties.{name}.models")),
                                span: Some(m.span()),
                                message: "give three model names: small, medium, large".into(),
                            });
                            continue;
                        }
                    },
                };
                let specialty = Specialty {
                    backend: backend_of(sp.backend),
                    models,
                };
                configured.push((name, specialty));
            }
            (Specialties::with(configured), None)
        }
        Err(e) => (Specialties::builtin(), Some(e.clone())),
    };
    for hook in registry.hooks() {
        let Some(name) = hook.specialty.as_deref() else {
            continue;
        };
        if table.get(name).is_some() {
            continue;
        }
        // At the `specialty` line of the hook's file when it can be read there; else the hook.
        let (file, line, column, field) = match &hook.source {
            Some(s) => {
                let file = std::path::PathBuf::from(&s.file);
                match capt_hook_toml::loader::locate_hook_key(&file, s.line, "specialty") {
                    Some((line, column, field)) => (file, line, column, field),
                    None => (file, s.line, 1, "specialty".to_owned()),
                }
            }
            None => (
                std::path::PathBuf::from(&hook.name),
                0,
                0,
                "specialty".to_owned(),
            ),
        };
        let mut message = format!(
            "{}: no specialty `{name}`; define it under [llm.specialties.{name}] in {} or use \
             one of {}",
            hook.name,
            config_file.display(),
            table.names()
        );
        if let Some(why) = &unread {
            message.push_str(&format!(" ({why})"));
        }
        errors.push(LoadError {
            file,
            line,
            column,
            field: Some(field),
            span: None,
            message,
        });
    }
    set_specialties(root, table);
    errors
}
