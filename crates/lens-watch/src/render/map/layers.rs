//! The drawing's layers: each service one layer past its deepest caller, cycles set aside.

use std::collections::HashMap;

/// The layer and row of each of `n` services (sorted by name) joined by `edges` (indexes, sorted):
/// edges that close a cycle (found depth first from the services nobody calls, in name order)
/// are set aside, then each service goes one layer past its deepest caller.
pub(super) fn layout(n: usize, edges: &[(usize, usize)]) -> (Vec<usize>, Vec<usize>) {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut called = vec![false; n];
    for &(from, to) in edges {
        if from != to {
            out[from].push(to);
            called[to] = true;
        }
    }
    // Depth first, iteratively: 0 unseen, 1 on the path, 2 done. An edge to a service on the
    // path closes a cycle.
    let mut state = vec![0u8; n];
    let mut forward: Vec<Vec<usize>> = vec![Vec::new(); n];
    let starts = (0..n).filter(|&i| !called[i]).chain(0..n);
    for start in starts {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut path = vec![(start, 0usize)];
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            let Some(&to) = out[node].get(*next) else {
                state[node] = 2;
                path.pop();
                continue;
            };
            *next += 1;
            match state[to] {
                0 => {
                    forward[node].push(to);
                    state[to] = 1;
                    path.push((to, 0));
                }
                2 => forward[node].push(to),
                _ => {}
            }
        }
    }
    // Longest path over what is left (acyclic), in topological order.
    let mut waiting = vec![0usize; n];
    for to in forward.iter().flatten() {
        waiting[*to] += 1;
    }
    let mut layer = vec![0usize; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while let Some(node) = ready.pop() {
        for &to in &forward[node] {
            layer[to] = layer[to].max(layer[node] + 1);
            waiting[to] -= 1;
            if waiting[to] == 0 {
                ready.push(to);
            }
        }
    }
    // Names are sorted: rows in index order are rows by name.
    let mut filled: HashMap<usize, usize> = HashMap::new();
    let row = layer
        .iter()
        .map(|l| {
            let next = filled.entry(*l).or_default();
            *next += 1;
            *next - 1
        })
        .collect();
    (layer, row)
}
