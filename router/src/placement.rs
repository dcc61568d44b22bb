//! Where a file can be when it is not at home (list version 3): the earlier placements still
//! open.
//!
//! A file is away from its home under the published list for a known reason, and each reason
//! is an earlier list that homed it elsewhere: a client on that list wrote it and the rebalance
//! has not moved it yet; it lies in a shard that is draining now (the list before the drain
//! homed it there); it predates the router, in the first shard's directory (the list of that
//! one shard, `/`); the list was migrated from `modulo-sha256`. A placement is such a list's
//! active shards and strategy: nothing else routes.
//!
//! A version 3 list carries `"open"`: the placements whose files may still be away from home,
//! or `"everywhere"` when the function does not know them (a list it had published in an
//! earlier form). A miss then looks at home, and at the path's home under each open placement
//! where that differs: with none open, nowhere else. The function closes placements once no
//! client reads their list and a whole rebalance pass since has left nothing away from home;
//! it publishes the new form only when every client reads version 3 (docs/contract.md, "The published list").

use crate::list::{Shard, Strategy, Target};
use crate::path::LogicalPath;
use crate::shard::index_of;
use serde::{Deserialize, Serialize};

/// The earlier placements whose files may still be away from home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Open {
    /// Not known: a miss looks in every shard, as in the earlier list forms.
    Everywhere(Everywhere),
    /// Only these (none: a miss looks at home alone).
    Placements(Vec<Placement>),
}

/// Read as `"everywhere"` or an array of placements, each error saying which it was not.
impl<'de> Deserialize<'de> for Open {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "everywhere" => {
                Ok(Open::Everywhere(Everywhere::Everywhere))
            }
            v @ serde_json::Value::Array(_) => Vec::<Placement>::deserialize(v)
                .map(Open::Placements)
                .map_err(|e| D::Error::custom(format!("\"open\": {e}"))),
            other => Err(D::Error::custom(format!(
                "\"open\" is {other}: it is \"everywhere\" or a list of placements"
            ))),
        }
    }
}

/// The word for [`Open::Everywhere`] in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Everywhere {
    #[serde(rename = "everywhere")]
    Everywhere,
}

/// An earlier list's active shards and strategy: where it homed each path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub strategy: Strategy,
    /// Each mount target's active shards, as a list entry names them (its `root`, its `az_id`
    /// and how many: `root`, then `/shards/<az_id>.<k>`); in list order, which a
    /// `modulo-sha256` placement routes by.
    pub targets: Vec<Placed>,
}

/// One mount target's shards in a placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placed {
    pub root: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub az_id: Option<String>,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub shards: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Placement {
    /// The placement of a list with these targets: each one not draining, with its shards
    /// less those draining. A `rendezvous` placement is kept in root order, so that two lists
    /// that route alike have equal placements.
    pub fn of(strategy: Strategy, targets: &[Target]) -> Placement {
        let mut targets: Vec<Placed> = targets
            .iter()
            .filter(|t| !t.draining)
            .map(|t| Placed {
                root: t.root.clone(),
                az_id: t.az_id.clone().filter(|_| t.shards - t.draining_shards > 1),
                shards: t.shards.max(1) - t.draining_shards,
            })
            .collect();
        if strategy == Strategy::Rendezvous {
            targets.sort_by(|a, b| a.root.cmp(&b.root));
        }
        Placement { strategy, targets }
    }

    /// Every shard's root, in order.
    pub fn roots(&self) -> Vec<String> {
        self.shards().into_iter().map(|t| t.root).collect()
    }

    fn shards(&self) -> Vec<Shard> {
        self.targets
            .iter()
            .flat_map(|p| {
                let t = Target {
                    az_id: p.az_id.clone(),
                    shards: p.shards,
                    ..Target::new("", "", p.root.clone())
                };
                t.shard_roots()
            })
            .map(|root| Shard::new("", "", root))
            .collect()
    }

    /// The root of `logical`'s home under this placement (`raw`: the application's spelling,
    /// which `modulo-sha256` hashes). `None` for a placement of no shard.
    pub fn home_root(&self, raw: &str, logical: &LogicalPath) -> Option<String> {
        let shards = self.shards();
        let i = index_of(raw, logical, &shards, self.strategy).ok()?;
        Some(shards[i].root.clone())
    }

    /// The same placement with only the shards whose roots `keep` allows: a shard that left
    /// the list was drained first, so what this placement homed there went home. `None` when
    /// that changes where it homes what is left: a `modulo-sha256` placement that lost a shard.
    pub fn within(&self, keep: impl Fn(&str) -> bool) -> Option<Placement> {
        let mut targets = Vec::new();
        for p in &self.targets {
            if !keep(&p.root) {
                continue;
            }
            let az_id = p.az_id.as_deref().unwrap_or_default();
            let kept = (1..p.shards)
                .take_while(|&k| keep(&crate::list::extra_root(az_id, k)))
                .count() as u32
                + 1;
            targets.push(Placed {
                shards: kept,
                az_id: p.az_id.clone().filter(|_| kept > 1),
                ..p.clone()
            });
        }
        let same = targets == self.targets;
        match (self.strategy, same) {
            (Strategy::ModuloSha256, false) => None,
            _ => Some(Placement {
                strategy: self.strategy,
                targets,
            }),
        }
    }
}

impl Open {
    /// The roots a miss of `logical` looks in besides `home_root`, in the placements' order,
    /// each once; `None` for every shard ([`Open::Everywhere`]).
    pub fn miss_roots(
        &self,
        raw: &str,
        logical: &LogicalPath,
        home_root: &str,
    ) -> Option<Vec<String>> {
        let Open::Placements(placements) = self else {
            return None;
        };
        let mut roots: Vec<String> = Vec::new();
        for p in placements {
            if let Some(root) = p.home_root(raw, logical) {
                if root != home_root && !roots.contains(&root) {
                    roots.push(root);
                }
            }
        }
        Some(roots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(root: &str, az_id: Option<&str>, shards: u32) -> Placed {
        Placed {
            root: root.to_owned(),
            az_id: az_id.map(str::to_owned),
            shards,
        }
    }

    #[test]
    fn a_placement_is_the_active_shards_and_sheds_those_that_left() {
        let mut b = Target {
            az_id: Some("use1-az2".into()),
            shards: 3,
            draining_shards: 1,
            ..Target::new("b", "10.0.0.2", "/shards/use1-az2")
        };
        let a = Target::new("a", "10.0.0.1", "/");
        let p = Placement::of(Strategy::Rendezvous, &[b.clone(), a.clone()]);
        assert_eq!(
            p.targets,
            [
                placed("/", None, 1),
                placed("/shards/use1-az2", Some("use1-az2"), 2)
            ]
        );
        assert_eq!(p.roots(), ["/", "/shards/use1-az2", "/shards/use1-az2.1"]);
        // The extra shard left the list: the placement keeps the rest.
        let kept = p.within(|r| r != "/shards/use1-az2.1").unwrap();
        assert_eq!(kept.roots(), ["/", "/shards/use1-az2"]);
        // A modulo placement that loses a shard would home the rest elsewhere: refused.
        b.draining = true;
        let m = Placement::of(Strategy::ModuloSha256, &[a, Target::new("c", "x", "/c")]);
        assert_eq!(m.within(|r| r != "/c"), None);
        assert_eq!(m.within(|_| true), Some(m.clone()));
    }

    #[test]
    fn a_miss_looks_where_an_open_placement_homes_the_path_once() {
        let p = LogicalPath::parse("data/x.json").unwrap();
        let single = Placement {
            strategy: Strategy::Rendezvous,
            targets: vec![placed("/", None, 1)],
        };
        let open = Open::Placements(vec![single.clone(), single]);
        assert_eq!(
            open.miss_roots("data/x.json", &p, "/b"),
            Some(vec!["/".into()])
        );
        assert_eq!(open.miss_roots("data/x.json", &p, "/"), Some(vec![]));
        assert_eq!(
            Open::Placements(vec![]).miss_roots("x", &p, "/"),
            Some(vec![])
        );
        let everywhere = Open::Everywhere(Everywhere::Everywhere);
        assert_eq!(everywhere.miss_roots("data/x.json", &p, "/"), None);
        assert_eq!(
            serde_json::to_string(&everywhere).unwrap(),
            r#""everywhere""#
        );
    }
}
