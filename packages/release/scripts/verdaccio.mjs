// A private npm registry on loopback for the release test: Verdaccio 6.8.0, installed outside the
// workspace (so it never enters a published package's tree or the lockfile), started on 127.0.0.1
// with an OS-chosen port and a throwaway storage folder, stopped by the test.
//
// Verdaccio 6.8.0 needs node-fetch pinned to 2.7.0 on Node 20 (shared/TOOLCHAIN.md); that override
// lives in the runtime folder's own package.json.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertLoopbackRegistry, PUBLIC_NPM_REGISTRY } from './registry-guard.mjs';

export const VERDACCIO_VERSION = '6.8.0';
const here = dirname(fileURLToPath(import.meta.url));

/** Where the Verdaccio runtime is cached between runs (override with RETRYSAFE_VERDACCIO_HOME). */
export function verdaccioHome(env = process.env) {
  return (
    env.RETRYSAFE_VERDACCIO_HOME ??
    join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'retrysafe', `verdaccio-${VERDACCIO_VERSION}`)
  );
}

/** An environment for child npm/pnpm processes with every registry and auth setting removed. */
export function cleanEnv(env = process.env) {
  const out = {};
  for (const [k, v] of Object.entries(env)) {
    if (/^npm_config_/i.test(k) && /registry|token|auth|userconfig/i.test(k)) continue;
    if (/^(NPM_TOKEN|NODE_AUTH_TOKEN)$/.test(k)) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Installs Verdaccio into the cache folder unless it is already there. Returns
 * `{ dir, installedNow, ms }`. The install goes to the public registry the machine is configured for
 * (registry settings of the caller are dropped, so a loopback registry of an earlier run is not asked).
 */
export function ensureVerdaccio(home = verdaccioHome()) {
  const marker = join(home, 'node_modules', 'verdaccio', 'package.json');
  if (existsSync(marker) && JSON.parse(readFileSync(marker, 'utf8')).version === VERDACCIO_VERSION) {
    return { dir: home, installedNow: false, ms: 0 };
  }
  const t0 = Date.now();
  const tmp = `${home}.installing-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(
    join(tmp, 'package.json'),
    JSON.stringify(
      {
        name: 'retrysafe-verdaccio-runtime',
        private: true,
        dependencies: { verdaccio: VERDACCIO_VERSION },
        overrides: { 'node-fetch': '2.7.0' },
      },
      null,
      2,
    ),
  );
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=error', '--omit=dev', `--registry=${PUBLIC_NPM_REGISTRY}`],
    {
      cwd: tmp,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  rmSync(home, { recursive: true, force: true });
  mkdirSync(dirname(home), { recursive: true });
  renameSync(tmp, home);
  return { dir: home, installedNow: true, ms: Date.now() - t0 };
}

/**
 * Starts Verdaccio on 127.0.0.1:<free port> with the repo's config (verdaccio/config.yaml) and a
 * storage folder under `workDir`. Resolves to `{ url, port, stop() }` once it answers.
 * @param {{ runtimeDir: string, workDir: string, uplink?: string }} opts
 */
export async function startRegistry({ runtimeDir, workDir, uplink = PUBLIC_NPM_REGISTRY }) {
  mkdirSync(join(workDir, 'storage'), { recursive: true });
  const config = readFileSync(join(here, '..', 'verdaccio', 'config.yaml'), 'utf8')
    .replaceAll('{{STORAGE}}', join(workDir, 'storage'))
    .replaceAll('{{HTPASSWD}}', join(workDir, 'htpasswd'))
    .replaceAll('{{UPLINK}}', uplink);
  const configPath = join(workDir, 'config.yaml');
  writeFileSync(configPath, config);

  const child = spawn(process.execPath, [join(here, 'verdaccio-server.mjs'), runtimeDir, configPath], {
    cwd: workDir,
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let log = '';
  child.stderr.on('data', (d) => {
    log += d;
  });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Verdaccio did not start within 60 s:\n${log}`)), 60_000);
    child.stdout.on('data', (d) => {
      log += d;
      const m = /READY (\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Verdaccio exited (${code}) before it was ready:\n${log}`));
    });
  });
  assertLoopbackRegistry(url, 'the Verdaccio address');
  const ping = await fetch(new URL('-/ping', url));
  if (!ping.ok) throw new Error(`Verdaccio at ${url} answered ${ping.status} to /-/ping`);
  return {
    url,
    port: Number(new URL(url).port),
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
