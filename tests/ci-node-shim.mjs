// Set methods of ES2025 (Set.prototype.union, ...) for Node 20, which Debian 12 and this
// project's hosts have: gitlab-ci-local (the GitLab CI validator tests/ci-examples.sh runs)
// is built for Node 22 and uses them at load time. Loaded with `node --import`.
const ops = {
  union: (a, b) => new Set([...a, ...b]),
  intersection: (a, b) => new Set([...a].filter((x) => b.has(x))),
  difference: (a, b) => new Set([...a].filter((x) => !b.has(x))),
  symmetricDifference: (a, b) =>
    new Set([...[...a].filter((x) => !b.has(x)), ...[...b].filter((x) => !a.has(x))]),
  isSubsetOf: (a, b) => [...a].every((x) => b.has(x)),
  isSupersetOf: (a, b) => [...b].every((x) => a.has(x)),
  isDisjointFrom: (a, b) => [...a].every((x) => !b.has(x)),
};
for (const [name, fn] of Object.entries(ops)) {
  if (!Set.prototype[name]) {
    Object.defineProperty(Set.prototype, name, {
      configurable: true,
      writable: true,
      value(other) {
        return fn(this, new Set(other.keys ? other.keys() : other));
      },
    });
  }
}
