// Renders the card section of every adapter README (adapters/*/README.md) from the cards the adapter's
// built root entry exports. After `pnpm build`: `node scripts/render-cards.mjs` rewrites the sections,
// `--check` lists the READMEs that drifted and exits 1. packages/cli/test/adapter-surface.test.ts runs
// the check over every adapter.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const load = (file) => import(pathToFileURL(join(root, file)).href);

/** Every adapter's README: its text now, and the text with the card section rendered from its cards. */
export async function adapterReadmes() {
  const { entryCards, renderCards, replaceCardSection } = await load('packages/contract/dist/card-render.js');
  const adapters = readdirSync(join(root, 'adapters')).filter((a) =>
    existsSync(join(root, 'adapters', a, 'package.json')),
  );
  return Promise.all(
    adapters.sort().map(async (adapter) => {
      const file = join(root, 'adapters', adapter, 'README.md');
      const text = readFileSync(file, 'utf8');
      const cards = entryCards(await load(`adapters/${adapter}/dist/index.js`));
      return { adapter, file, cards, text, rendered: replaceCardSection(text, renderCards(cards)) };
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const drifted = (await adapterReadmes()).filter((r) => r.text !== r.rendered);
  for (const r of drifted) {
    if (check) console.error(`${r.file}: the card section differs from the cards (run node scripts/render-cards.mjs)`);
    else writeFileSync(r.file, r.rendered);
  }
  if (check && drifted.length > 0) process.exitCode = 1;
  else console.log(check ? 'every adapter README shows its cards' : `${drifted.length} README(s) rewritten`);
}
