import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { HttpAdapterConfig } from '@retrysafe/config';
import type { RetrySafetyCard } from '@retrysafe/contract';
import type { HttpOperationDeclaration } from '@retrysafe/http';
import type { ConformanceOptions } from '@retrysafe/testkit';
import type { Options } from './command.js';
import { pickKnown, UsageError } from './errors.js';

/** One adapter package as the CLI sees it: its drill setups (one per provider/sandbox) and where they come from. */
export type AdapterEntry = ReturnType<typeof entryFrom>;

// Each adapter's ./sandbox subpath exports the drill setups its own conformance test runs; the CLI runs exactly those.
export const ADAPTER_NAMES = ['sandbox', 'stripe', 'msgraph', 'hubspot', 'slack', 'http', 'resend', 'github'];
const packageOf = (name: string) => (name === 'sandbox' ? '@retrysafe/sandbox' : `@retrysafe/${name}/sandbox`);

const isDrill = (d: Partial<Record<keyof ConformanceOptions, unknown>> | null): d is ConformanceOptions =>
  typeof d?.name === 'string' &&
  typeof d.createAdapter === 'function' &&
  typeof d.startSandbox === 'function' &&
  typeof d.operations === 'object' &&
  d.operations !== null;

/** `missing` says why the package offers no drill setup (it does not export `drills`); null when it does. */
function entryFrom(name: string, from: string, mod: Record<string, unknown>) {
  const drills = mod.drills;
  const bad = Array.isArray(drills) ? drills.findIndex((d) => !isDrill(d)) : -1;
  const missing = !Array.isArray(drills)
    ? `${from} does not export \`drills\` (the drill setups its conformance test runs)`
    : bad >= 0
      ? `${from} drills[${bad}] is not a drill setup { name, createAdapter, startSandbox, operations }`
      : drills.length === 0
        ? `${from} exports no drill setup (\`drills\` is empty): nothing to drill, no cards to list`
        : null;
  return { name, from, drills: missing ? [] : (drills as ConformanceOptions[]), missing };
}

// Each adapter's cards as plain data, from a module that imports no vendor SDK: the cards of its drills (a test checks).
const CARD_MODULES = {
  '@retrysafe/sandbox/cards': 'sandboxCards',
  '@retrysafe/stripe/cards': 'stripeCards',
  '@retrysafe/msgraph/cards': 'msGraphCards',
  '@retrysafe/hubspot/cards': 'hubSpotCards',
  '@retrysafe/slack/cards': 'slackCards',
  '@retrysafe/http/cards': 'httpCards',
  '@retrysafe/resend/cards': 'resendCards',
  '@retrysafe/github/cards': 'gitHubCards',
};

/** The cards of every shipped adapter, read without building one. */
export async function shippedCards(): Promise<RetrySafetyCard[]> {
  const modules = Object.entries(CARD_MODULES).map(async ([from, name]) => (await import(from))[name]);
  return (await Promise.all(modules)).flatMap((cards: Record<string, RetrySafetyCard>) => Object.values(cards));
}

/** An adapter module of the user's own (`--module`), named by its `name`, else by its drills, else by its file. */
async function moduleEntry(file: string): Promise<AdapterEntry> {
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`--module ${file}: no such file`);
  const mod: Record<string, unknown> = await import(pathToFileURL(path).href).catch((e: Error) => {
    throw new UsageError(`--module ${file}: cannot import it: ${e.message.split('\n')[0]}`);
  });
  const entry = entryFrom(file, file, mod);
  if (entry.missing) throw new UsageError(`--module ${entry.missing}`);
  const drillNames = [...new Set(entry.drills.map((d) => d.name))].join('+');
  const name =
    typeof mod.name === 'string' && mod.name ? mod.name : drillNames || basename(path).replace(/\.[cm]?js$/, '');
  return { ...entry, name };
}

export const ADAPTER_OPTIONS = {
  adapter: { argument: '<name>', parse: 'list', description: 'only this adapter' },
  module: {
    argument: '<file>',
    parse: 'list',
    description: 'also the `drills` exported by this file of your own (a new adapter); without --adapter, only it',
  },
  config: {
    argument: '<file>',
    description: 'the `type: http` adapters this retrysafe config declares; without --adapter, only them',
  },
} as const satisfies Options;

/** The drill setups of the named adapters (all by default, none when only `modules` or `config` are given). */
export async function loadAdapters(
  names?: readonly string[],
  modules: readonly string[] = [],
  config?: string,
): Promise<AdapterEntry[]> {
  const chosen = names?.length
    ? pickKnown('adapter', ADAPTER_NAMES, names)
    : modules.length || config
      ? []
      : ADAPTER_NAMES;
  const builtIn = await Promise.all(chosen.map(async (n) => entryFrom(n, packageOf(n), await import(packageOf(n)))));
  const own: AdapterEntry[] = [];
  for (const file of modules) own.push(await moduleEntry(file));
  return [...builtIn, ...own, ...(config ? await configEntries(config) : [])];
}

/** Drill setups for a config's `type: http` adapters, on their pattern sandboxes; `headersFromEnv` is never read. */
async function configEntries(file: string): Promise<AdapterEntry[]> {
  const { loadConfigFile, httpDeclarationOf } = await import('@retrysafe/config');
  const { drillsForDeclaration } = await import('@retrysafe/http/sandbox');
  const config = await loadConfigFile(file);
  const out: AdapterEntry[] = [];
  for (const [name, c] of Object.entries(config.adapters)) {
    if ((c as { type?: string } | undefined)?.type !== 'http') continue;
    const { headersFromEnv: _skipped, ...http } = c as HttpAdapterConfig;
    const declaration = httpDeclarationOf(name, http, config.baseDir, {});
    try {
      const operations = declaration.operations as unknown as Record<string, HttpOperationDeclaration>;
      const drills = drillsForDeclaration({ ...declaration, name, operations });
      if (drills.length === 0) throw new Error('declares no operation: nothing to drill, no cards to list');
      // Build each once now, so a declaration the adapter refuses is a usage error before anything runs.
      for (const d of drills) await drillCards(d);
      out.push({ name, from: `${file} (adapters.${name})`, drills, missing: null });
    } catch (e) {
      throw new UsageError(`--config ${file}: adapters.${name}: ${(e as Error).message}`);
    }
  }
  if (out.length === 0)
    throw new UsageError(
      `--config ${file}: no adapter of type http in it (a built-in adapter is chosen with --adapter)`,
    );
  return out;
}

// Each drill's cards, read from an adapter built once for them: its base URL (port 9, discard) is never contacted.
// configEntries' check gives cardsOf's.
const cardsRead = new WeakMap<ConformanceOptions, Promise<RetrySafetyCard[]>>();
function drillCards(drill: ConformanceOptions): Promise<RetrySafetyCard[]> {
  const read = async () => {
    const adapter = await drill.createAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 });
    const cards = Object.values(adapter.operations ?? {}).map((spec) => spec.card);
    await adapter.close?.();
    return cards;
  };
  if (!cardsRead.has(drill)) cardsRead.set(drill, read());
  return cardsRead.get(drill)!;
}

/** Each operation's card once, filed under `<operation>` in docs/cards, or `<operation>--<drill>` when drills of one
 * adapter declare it differently. */
export async function cardsOf(entry: AdapterEntry) {
  const seen: { drill: string; card: RetrySafetyCard }[] = [];
  for (const drill of entry.drills) for (const card of await drillCards(drill)) seen.push({ drill: drill.name, card });
  const out: { name: string; adapter: string; card: RetrySafetyCard }[] = [];
  for (const { drill, card } of seen) {
    const variants = new Set(
      seen.filter((s) => s.card.operation === card.operation).map((s) => JSON.stringify(s.card)),
    );
    const name = variants.size > 1 ? `${card.operation}--${drill}` : card.operation;
    if (!out.some((c) => c.name === name)) out.push({ name, adapter: entry.name, card });
  }
  return out;
}
export type NamedCard = Awaited<ReturnType<typeof cardsOf>>[number];
