// Which registry a publish would really go to, asked of every tool that takes part in it.
//
// `changeset publish` decides "already published?" with `npm info --registry=<X>`, where X comes from
// publishConfig or the `npm_config_registry` variable (else the public registry), and then runs
// `pnpm publish` in each package folder — and pnpm 12 ignores `npm_config_registry`: it reads `.npmrc`
// and pnpm-workspace.yaml. So a run configured through only one of the two checks one registry and
// publishes to another. The guard asks each tool, from the folder where it will run, and refuses
// unless they all agree (and, for a test, unless that one registry is on loopback).
import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import { promisify } from 'node:util';

export const PUBLIC_NPM_REGISTRY = 'https://registry.npmjs.org/';
const SCOPE = '@retrysafe';

export class RegistryGuardError extends Error {
  /** @param {string} message @param {Record<string, string>} [seen] what each tool reported */
  constructor(message, seen = {}) {
    super(message);
    this.name = 'RegistryGuardError';
    this.code = 'RETRYSAFE_RELEASE_REGISTRY';
    this.seen = seen;
  }

  static isGuardError(e) {
    return typeof e === 'object' && e !== null && e.code === 'RETRYSAFE_RELEASE_REGISTRY';
  }
}

/** `http://127.0.0.1:4873` → `http://127.0.0.1:4873/` (trailing slash, as npm prints it). */
export function normaliseRegistry(url) {
  return url.endsWith('/') ? url : `${url}/`;
}

/**
 * True only for an http(s) URL whose host is a loopback IP literal (127.0.0.0/8 or ::1). Host names,
 * `localhost` included, are refused: what they resolve to is not in this URL.
 */
export function isLoopbackRegistry(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  if (u.username || u.password) return false;
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

export function assertLoopbackRegistry(url, where = 'registry') {
  if (typeof url !== 'string' || !isLoopbackRegistry(url)) {
    throw new RegistryGuardError(
      `${where} is ${JSON.stringify(url)}, not a loopback address (127.0.0.0/8 or [::1]): refusing to publish`,
    );
  }
  return normaliseRegistry(url);
}

/** The registry `tool` (npm or pnpm) would use for `@retrysafe/*` when run in `cwd`. */
async function registryOf(tool, cwd, env) {
  const { stdout } = await promisify(execFile)(tool, ['config', 'list', '--json'], { cwd, env, encoding: 'utf8' });
  const config = JSON.parse(stdout);
  return config[`${SCOPE}:registry`] ?? config.registry ?? null;
}

/**
 * The registry `changeset publish` will query for a package (reimplemented from
 * @changesets/cli 2.31.1 `getCorrectRegistry`, so the guard sees what it will see).
 */
export function changesetsRegistryFor(manifest, env) {
  const pc = manifest.publishConfig ?? {};
  const scoped = pc[`${SCOPE}:registry`] ?? env[`npm_config_${SCOPE}:registry`];
  if (scoped) return scoped;
  const plain = pc.registry ?? env.npm_config_registry;
  if (!plain || normaliseRegistry(plain) === PUBLIC_NPM_REGISTRY || /^https:\/\/registry\.yarnpkg\.com\/?$/.test(plain))
    return PUBLIC_NPM_REGISTRY;
  return plain;
}

/**
 * Asks npm and pnpm (from the root and from each package folder, where `pnpm publish` runs) and the
 * changesets rule which registry they will use for `@retrysafe/*`. Resolves to `{ registry, seen }` when all agree; rejects with
 * RegistryGuardError otherwise, or when `loopbackOnly` and the registry is not on loopback.
 *
 * @param {{ root: string, packages: { dir: string, name: string, manifest: object }[], env?: NodeJS.ProcessEnv, loopbackOnly?: boolean }} opts
 */
export async function resolvePublishRegistry({ root, packages, env = process.env, loopbackOnly = false }) {
  const asks = [['npm (workspace root)', registryOf('npm', root, env)]];
  for (const p of packages) {
    // pnpm publish runs in the package folder; npm is asked there too in case anything delegates to it.
    asks.push([`pnpm (${p.name})`, registryOf('pnpm', p.dir, env)]);
    asks.push([`npm (${p.name})`, registryOf('npm', p.dir, env)]);
    asks.push([`changesets npm info (${p.name})`, changesetsRegistryFor(p.manifest, env)]);
  }
  const seen = Object.fromEntries(await Promise.all(asks.map(async ([k, v]) => [k, await v])));
  const values = new Set(Object.values(seen).map((v) => (v === null ? 'null' : normaliseRegistry(v))));
  const table = Object.entries(seen)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join('\n');
  if (values.size !== 1) {
    throw new RegistryGuardError(
      `the tools taking part in the publish do not agree on the registry; set it in BOTH a project .npmrc and npm_config_registry:\n${table}`,
      seen,
    );
  }
  const [registry] = values;
  if (registry === 'null') throw new RegistryGuardError(`no registry configured:\n${table}`, seen);
  if (loopbackOnly) assertLoopbackRegistry(registry, `the publish registry (\n${table}\n)`);
  return { registry, seen };
}
