import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cardsOf, loadAdapters } from '../src/registry.js';
import { ANSI, cli, REPO, tempDir } from './helpers.js';

describe('retrysafe cards --write / --check', () => {
  const dir = join(tempDir('cards'), 'cards');
  let written: { code: number | null; json: any };

  beforeAll(async () => {
    const r = await cli(['cards', '--write', '--dir', dir, '--json']);
    written = { code: r.code, json: JSON.parse(r.stdout) };
  }, 120_000);

  it('--write generates one page per card plus an index, every card valid', () => {
    expect(written.json.problems).toEqual([]);
    expect(written.code).toBe(0);
    const files = readdirSync(dir).sort();
    expect(files).toEqual([...written.json.cards.map((c: string) => `${c}.md`), 'README.md'].sort());
    // every adapter contributes a section of cards to the index
    const index = readFileSync(join(dir, 'README.md'), 'utf8');
    for (const adapter of ['sandbox', 'stripe', 'msgraph', 'hubspot', 'http', 'resend', 'github'])
      expect(index, adapter).toMatch(new RegExp(`## ${adapter}\\n\\n\\| card[^\\n]*\\n\\|---[^\\n]*\\n\\| \\[`));
    const stripe = readFileSync(join(dir, 'stripe.paymentIntents.create.md'), 'utf8');
    expect(stripe).toContain('Do not edit by hand');
    expect(stripe).toContain('| Provider key name | Idempotency-Key |');
  });

  it('--check passes right after --write', async () => {
    const r = await cli(['cards', '--check', '--dir', dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/✓ \d+ cards in .* match the card objects/);
  });

  it('--check fails (exit 1) when a page in a copy was edited by hand, and names it', async () => {
    const copy = join(tempDir('cards-edited'), 'cards');
    cpSync(dir, copy, { recursive: true });
    const page = join(copy, 'stripe.customers.create.md');
    const before = readFileSync(page, 'utf8');
    const after = before.replace(/\| Max attempts \| \d+ \|/, '| Max attempts | 99 |');
    expect(after).not.toBe(before);
    writeFileSync(page, after);
    const r = await cli(['cards', '--check', '--dir', copy, '--json']);
    expect(r.code).toBe(1);
    const res = JSON.parse(r.stdout);
    expect(res.ok).toBe(false);
    expect(res.problems).toEqual([
      { file: 'stripe.customers.create.md', problem: expect.stringContaining('differs from the card object') },
    ]);
  });

  it('--check fails when a page is missing or a stale page no adapter declares is left behind', async () => {
    const copy = join(tempDir('cards-drift'), 'cards');
    cpSync(dir, copy, { recursive: true });
    rmSync(join(copy, 'stripe.refunds.create.md'));
    writeFileSync(join(copy, 'stripe.charges.create.md'), '# gone\n');
    const r = await cli(['cards', '--check', '--dir', copy]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('stripe.refunds.create.md: missing');
    expect(r.stderr).toContain('stripe.charges.create.md: no adapter declares this card');
    expect(r.stdout).toContain('2 problem(s)');
  });

  it('--check fails on a card with an unknown fact not listed as unverified, and --write does not publish it', async () => {
    const own = join(tempDir('cards-unlisted'), 'cards');
    const args = ['--module', 'packages/cli/test/fixtures/unlisted-unknown.mjs', '--dir', own];
    const w = await cli(['cards', '--write', ...args]);
    expect(w.code).toBe(1);
    expect(existsSync(join(own, 'sandbox.records.create.md'))).toBe(false);
    const r = await cli(['cards', '--check', ...args, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).problems).toContainEqual({
      file: 'sandbox.records.create.md',
      problem:
        'lookup.consistencyDelay: value is "unknown" but the field is not listed in unverified[] with its source',
    });
  });

  it("the repository's docs/cards are up to date (what CI runs)", async () => {
    const r = await cli(['cards', '--check'], { cwd: REPO });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

describe('retrysafe cards (printing)', () => {
  it('prints Markdown cards of one adapter', async () => {
    const r = await cli(['cards', '--adapter', 'stripe']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('### `stripe.paymentIntents.create`');
    expect(r.stdout).not.toMatch(ANSI);
    expect(r.stdout).not.toContain('msgraph.');
  });

  it('prints JSON cards with --format json (and --json)', async () => {
    for (const flag of [['--format', 'json'], ['--json']]) {
      const r = await cli(['cards', '--adapter', 'stripe', ...flag]);
      expect(r.code).toBe(0);
      const cards = JSON.parse(r.stdout) as { operation: string; provider: string }[];
      expect(cards.map((c) => c.operation).sort()).toEqual([
        'stripe.customers.create',
        'stripe.invoices.create',
        'stripe.paymentIntents.create',
        'stripe.refunds.create',
      ]);
      expect(cards.every((c) => c.provider === 'stripe')).toBe(true);
    }
  });
});

describe('retrysafe cards --help', () => {
  it('describes --config as what it chooses, not as a drill (cards drill nothing)', async () => {
    const r = await cli(['cards', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--config <file>/);
    expect(r.stdout).not.toMatch(/drilled/);
  });
});

describe('cards --config', () => {
  it('builds each `type: http` adapter once: the check that refuses a bad declaration gives its cards', async () => {
    const [entry] = await loadAdapters(undefined, [], join(REPO, 'packages/config/examples/http-api/retrysafe.yaml'));
    let builds = 0;
    for (const d of entry!.drills) {
      const create = d.createAdapter;
      d.createAdapter = (o) => {
        builds++;
        return create(o);
      };
    }
    expect((await cardsOf(entry!)).map((c) => c.card.operation)).toContain('acme.orders.create');
    expect(builds).toBe(0);
  });

  it('a config without a `type: http` adapter is refused in words that fit cards as well as drill', async () => {
    const config = join(tempDir('cards-no-http'), 'retrysafe.json');
    writeFileSync(config, JSON.stringify({ adapters: { stripe: { apiKeyEnv: 'STRIPE_API_KEY' } } }));
    const refused = loadAdapters(undefined, [], config);
    await expect(refused).rejects.toThrow(/no adapter of type http/);
    await expect(refused).rejects.not.toThrow(/drill/);
  });

  it('a `type: http` adapter that declares no operation is refused for cards and drill alike, by its place', async () => {
    const config = join(tempDir('cards-no-ops'), 'retrysafe.json');
    const acme = { type: 'http', baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000, operations: {} };
    writeFileSync(config, JSON.stringify({ adapters: { acme } }));
    await expect(loadAdapters(undefined, [], config)).rejects.toThrow(
      `--config ${config}: adapters.acme: declares no operation: nothing to drill, no cards to list`,
    );
  });
});
