//! Pages of what moto answers in one piece, as AWS pages them: a JSON array with a marker
//! (EFS `Marker`/`NextMarker`) and an EC2 query answer's `<item>` set with `nextToken`. The
//! proxy asks moto for everything and cuts the page out itself, so moto never sees a marker
//! it did not issue.

use serde_json::{json, Value};

/// The marker or token the proxy issues for the page starting at `offset`.
pub fn token(offset: usize) -> String {
    format!("proxy-page-{offset}")
}

/// The offset a marker or token the proxy issued stands for (0 for none).
pub fn offset(token: Option<&str>) -> usize {
    token
        .and_then(|t| t.strip_prefix("proxy-page-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Keeps the page of `v[key]` (a JSON array) that starts at `from`, of `size` items, and
/// sets `marker_key`/`next_key` as EFS does.
pub fn page_json(v: &mut Value, key: &str, from: usize, size: usize, marker: Option<&str>) {
    let Some(items) = v[key].as_array().cloned() else {
        return;
    };
    let end = (from + size).min(items.len());
    v[key] = json!(items.get(from.min(end)..end).unwrap_or(&[]));
    if let Some(m) = marker {
        v["Marker"] = json!(m);
    }
    if end < items.len() {
        v["NextMarker"] = json!(token(end));
    } else if let Some(o) = v.as_object_mut() {
        o.remove("NextMarker");
    }
}

/// Keeps the page of the top-level `<item>`s inside `<set>…</set>` of an EC2 query answer
/// that starts at `from`, of `size` items, with `<nextToken>` when more follow. Items nest
/// (a subnet's tags are `<item>`s too), so only those at depth one count.
pub fn page_xml(body: &str, set: &str, from: usize, size: usize) -> Option<String> {
    let open = format!("<{set}>");
    let close = format!("</{set}>");
    let start = body.find(&open)? + open.len();
    let end = start + body[start..].find(&close)?;
    let items = top_level_items(&body[start..end]);
    let stop = (from + size).min(items.len());
    let kept: String = items.get(from.min(stop)..stop).unwrap_or(&[]).concat();
    let next = if stop < items.len() {
        format!("<nextToken>{}</nextToken>", token(stop))
    } else {
        String::new()
    };
    Some(format!(
        "{}{kept}{close}{next}{}",
        &body[..start],
        &body[end + close.len()..]
    ))
}

fn top_level_items(inner: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut begin, mut i) = (0usize, 0usize, 0usize);
    while i < inner.len() {
        let rest = &inner[i..];
        if rest.starts_with("<item>") {
            if depth == 0 {
                begin = i;
            }
            depth += 1;
            i += "<item>".len();
        } else if rest.starts_with("</item>") {
            depth = depth.saturating_sub(1);
            i += "</item>".len();
            if depth == 0 {
                items.push(&inner[begin..i]);
            }
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    items
}

/// `query` (or a form body) without the `keys` parameters.
pub fn without_params(query: &str, keys: &[&str]) -> String {
    query
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            !keys.contains(&key)
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The value of parameter `key` in `query` (or a form body), URL-decoded.
pub fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.replace("%2F", "/").replace("%3D", "="))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_items_stay_inside_their_subnet() {
        let body = "<R><subnetSet><item><id>a</id><tagSet><item>t</item></tagSet></item>\
                    <item><id>b</id></item><item><id>c</id></item></subnetSet></R>";
        let first = page_xml(body, "subnetSet", 0, 2).unwrap();
        assert!(first.contains("<id>a</id>") && first.contains("<item>t</item>"));
        assert!(first.contains("<id>b</id>") && !first.contains("<id>c</id>"));
        assert!(first.contains(&format!("<nextToken>{}</nextToken>", token(2))));
        let second = page_xml(body, "subnetSet", 2, 2).unwrap();
        assert!(second.contains("<id>c</id>") && !second.contains("nextToken"));
    }

    #[test]
    fn a_json_array_pages_with_markers() {
        let mut v = json!({"MountTargets": [1, 2, 3]});
        page_json(&mut v, "MountTargets", 0, 2, None);
        assert_eq!(v["MountTargets"], json!([1, 2]));
        assert_eq!(offset(v["NextMarker"].as_str()), 2);
        let mut v = json!({"MountTargets": [1, 2, 3]});
        page_json(&mut v, "MountTargets", 2, 2, Some(&token(2)));
        assert_eq!(v["MountTargets"], json!([3]));
        assert!(v.get("NextMarker").is_none());
    }
}
