//! One case of a peer's corpus: the command line, what the peer decides for it, where the case
//! came from, and the family of commands it belongs to.

use std::collections::BTreeMap;
use std::fmt;

/// What a peer's corpus says the peer does with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PeerVerdict {
    /// The command runs without a word.
    Allow,
    /// The command runs, flagged (dcg's medium- and low-severity patterns, its `WARN` cases):
    /// neither destructive nor allowed in the figures, counted on its own.
    Warn,
    /// The user is asked first.
    Ask,
    /// The command is refused.
    Deny,
}

impl PeerVerdict {
    /// The corpus word for a verdict (`deny`, `block`, `ask`, `allow`, `warn`), any case.
    pub fn parse(word: &str) -> Option<PeerVerdict> {
        match word.trim().to_ascii_lowercase().as_str() {
            "allow" | "allowed" | "pass" => Some(PeerVerdict::Allow),
            "warn" | "log" => Some(PeerVerdict::Warn),
            "ask" => Some(PeerVerdict::Ask),
            "deny" | "block" | "blocked" => Some(PeerVerdict::Deny),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PeerVerdict::Allow => "allow",
            PeerVerdict::Warn => "warn",
            PeerVerdict::Ask => "ask",
            PeerVerdict::Deny => "deny",
        }
    }
}

impl fmt::Display for PeerVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The families of destructive commands issue 28 holds the safety pack to; `Other` is outside
/// them (its cases are printed, not held to the thresholds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Git,
    Filesystem,
    Database,
    Containers,
    Kubernetes,
    Cloud,
    Terraform,
    Publishing,
    Other,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Git => "git",
            Family::Filesystem => "filesystem",
            Family::Database => "database",
            Family::Containers => "containers",
            Family::Kubernetes => "kubernetes",
            Family::Cloud => "cloud",
            Family::Terraform => "terraform",
            Family::Publishing => "publishing",
            Family::Other => "other",
        }
    }

    /// Whether the thresholds hold for this family.
    pub fn in_family(self) -> bool {
        self != Family::Other
    }

    /// The family of a command line: the first word, left to right, that names a program of a
    /// family (so `sudo rm -rf /` is filesystem and `kubectl exec p -- rm -rf /` is
    /// kubernetes). Package managers count as publishing only when a later word publishes
    /// (`npm publish`, `cargo yank`, `gem push`); SQL that drops or truncates, with no
    /// database client named, is database.
    pub fn of(command: &str) -> Family {
        let words = words(command);
        for (i, word) in words.iter().enumerate() {
            let base = word.rsplit('/').next().unwrap_or(word);
            if let Some(family) = program_family(base) {
                return family;
            }
            if PUBLISHERS.contains(&base)
                && words[i + 1..]
                    .iter()
                    .take(6)
                    .any(|w| PUBLISH_VERBS.contains(&w.as_str()))
            {
                return Family::Publishing;
            }
        }
        let upper = command.to_ascii_uppercase();
        let sql = [
            "DROP TABLE",
            "DROP DATABASE",
            "DROP SCHEMA",
            "TRUNCATE ",
            "DELETE FROM",
        ];
        if sql.iter().any(|s| upper.contains(s)) {
            return Family::Database;
        }
        Family::Other
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Programs by family. A program is in one family whatever it is asked to do: a read-only
/// `kubectl get` is a kubernetes case the peer allows.
const FAMILIES: &[(Family, &[&str])] = &[
    // Not the forges' CLIs (`gh`, `glab`): they change a hosted service, not history or the
    // working tree.
    (Family::Git, &["git", "git-filter-repo"]),
    (
        Family::Filesystem,
        &[
            "rm", "rmdir", "shred", "unlink", "srm", "dd", "mkfs", "wipefs", "fdisk", "sfdisk",
            "parted", "truncate", "chmod", "chown", "chgrp", "find", "mv", "cp", "ln", "rsync",
            "trash",
        ],
    ),
    (
        Family::Database,
        &[
            "psql",
            "pg_dump",
            "pg_restore",
            "dropdb",
            "createdb",
            "pg_ctl",
            "mysql",
            "mariadb",
            "mysqladmin",
            "mysqldump",
            "mongo",
            "mongosh",
            "mongodump",
            "mongorestore",
            "redis-cli",
            "sqlite3",
            "sqlcmd",
            "cockroach",
            "clickhouse-client",
            "snowsql",
            "snow",
            "bq",
            "databricks",
            "supabase",
            "duckdb",
            "influx",
            "cqlsh",
            "prisma",
        ],
    ),
    (
        Family::Containers,
        &[
            "docker",
            "docker-compose",
            "podman",
            "podman-compose",
            "nerdctl",
            "buildah",
            "crictl",
            "ctr",
        ],
    ),
    (
        Family::Kubernetes,
        &[
            "kubectl",
            "helm",
            "kustomize",
            "k9s",
            "kind",
            "minikube",
            "k3d",
            "oc",
            "kubeadm",
            "velero",
        ],
    ),
    (
        Family::Cloud,
        &[
            "aws",
            "gcloud",
            "gsutil",
            "az",
            "doctl",
            "oci",
            "ibmcloud",
            "hcloud",
            "linode-cli",
            "heroku",
            "fly",
            "flyctl",
            "vercel",
            "netlify",
            "firebase",
            "wrangler",
            "s3cmd",
            "eksctl",
            "sam",
            "cdk",
            "serverless",
            "sls",
            "scw",
            "exo",
            "railway",
            "render",
        ],
    ),
    (
        Family::Terraform,
        &[
            "terraform",
            "tofu",
            "terragrunt",
            "pulumi",
            "atmos",
            "cdktf",
            "packer",
            "ansible",
            "ansible-playbook",
        ],
    ),
];

/// Package managers whose publishing verbs make a case a publishing one.
const PUBLISHERS: &[&str] = &[
    "npm",
    "yarn",
    "pnpm",
    "bun",
    "cargo",
    "poetry",
    "uv",
    "gem",
    "twine",
    "flit",
    "hatch",
    "pdm",
    "dotnet",
    "nuget",
    "mvn",
    "gradle",
    "./gradlew",
    "gradlew",
    "pip",
    "conda",
];

const PUBLISH_VERBS: &[&str] = &[
    "publish",
    "unpublish",
    "yank",
    "upload",
    "push",
    "deprecate",
    "owner",
    "dist-tag",
    "deploy",
];

fn program_family(word: &str) -> Option<Family> {
    // `mkfs.ext4` and friends.
    let word = if word.starts_with("mkfs.") {
        "mkfs"
    } else {
        word
    };
    FAMILIES
        .iter()
        .find(|(_, programs)| programs.contains(&word))
        .map(|(family, _)| *family)
}

/// The command's words, split at blanks and at the shell's punctuation and quotes, so a program
/// inside `$(…)`, `sh -c '…'` or after `&&` stands alone.
fn words(command: &str) -> Vec<String> {
    command
        .split(|c: char| c.is_whitespace() || "'\"`;|&()<>{}$=\\,".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One case of a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The Bash command line, as the tool call would carry it.
    pub command: String,
    pub expected: PeerVerdict,
    pub family: Family,
    /// Where the case was read: a file of the corpus and a line, test id or pattern name.
    pub source: String,
}

impl Case {
    pub fn new(command: impl Into<String>, expected: PeerVerdict, source: String) -> Case {
        let command = command.into();
        Case {
            family: Family::of(&command),
            command,
            expected,
            source,
        }
    }
}

/// Cases a reader read, and what it passed over with the reason (a per-reason count).
#[derive(Debug, Default)]
pub struct Extracted {
    pub cases: Vec<Case>,
    pub skipped: BTreeMap<String, usize>,
}

impl Extracted {
    pub fn skip(&mut self, why: &str) {
        *self.skipped.entry(why.to_owned()).or_default() += 1;
    }

    pub fn extend(&mut self, other: Extracted) {
        self.cases.extend(other.cases);
        for (why, n) in other.skipped {
            *self.skipped.entry(why).or_default() += n;
        }
    }

    /// One case per command line: a command several tests name keeps the strictest verdict
    /// (a peer with several packs denies what any one of them denies) and its first source.
    pub fn dedup(&mut self) {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut out: Vec<Case> = Vec::with_capacity(self.cases.len());
        for case in std::mem::take(&mut self.cases) {
            match seen.get(&case.command) {
                Some(&i) => {
                    if case.expected > out[i].expected {
                        out[i].expected = case.expected;
                    }
                    self.skip("duplicate command line");
                }
                None => {
                    seen.insert(case.command.clone(), out.len());
                    out.push(case);
                }
            }
        }
        self.cases = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_is_the_first_program_that_names_one() {
        assert_eq!(Family::of("sudo rm -rf /"), Family::Filesystem);
        assert_eq!(Family::of("kubectl exec p -- rm -rf /"), Family::Kubernetes);
        assert_eq!(Family::of("cd repo && git reset --hard"), Family::Git);
        assert_eq!(
            Family::of("bash -c 'docker system prune -af'"),
            Family::Containers
        );
        assert_eq!(Family::of("/usr/bin/terraform destroy"), Family::Terraform);
        assert_eq!(Family::of("mkfs.ext4 /dev/sda1"), Family::Filesystem);
        assert_eq!(Family::of("aws s3 rb s3://b --force"), Family::Cloud);
        assert_eq!(Family::of("echo $(psql -c 'select 1')"), Family::Database);
    }

    #[test]
    fn package_managers_are_publishing_only_when_they_publish() {
        assert_eq!(
            Family::of("npm publish --access public"),
            Family::Publishing
        );
        assert_eq!(Family::of("cargo yank --version 1.0.0"), Family::Publishing);
        assert_eq!(Family::of("npm install left-pad"), Family::Other);
        assert_eq!(Family::of("cargo test"), Family::Other);
    }

    #[test]
    fn bare_sql_is_database() {
        assert_eq!(Family::of("echo 'DROP TABLE users;' | x"), Family::Database);
        assert_eq!(Family::of("ls -la"), Family::Other);
    }

    #[test]
    fn verdict_words() {
        assert_eq!(PeerVerdict::parse("BLOCK"), Some(PeerVerdict::Deny));
        assert_eq!(PeerVerdict::parse("ask"), Some(PeerVerdict::Ask));
        assert_eq!(PeerVerdict::parse("WARN"), Some(PeerVerdict::Warn));
        assert_eq!(PeerVerdict::parse("Allow"), Some(PeerVerdict::Allow));
        assert_eq!(PeerVerdict::parse("maybe"), None);
    }

    #[test]
    fn dedup_keeps_the_strictest_verdict() {
        let mut e = Extracted::default();
        e.cases
            .push(Case::new("x y", PeerVerdict::Allow, "a".into()));
        e.cases
            .push(Case::new("x y", PeerVerdict::Deny, "b".into()));
        e.cases.push(Case::new("z", PeerVerdict::Ask, "c".into()));
        e.dedup();
        assert_eq!(e.cases.len(), 2);
        assert_eq!(e.cases[0].expected, PeerVerdict::Deny);
        assert_eq!(e.cases[0].source, "a");
        assert_eq!(e.skipped["duplicate command line"], 1);
    }
}
