import { defineCommand, EXIT, type Options, type Parsed } from '../../command.js';
import { paint } from '../../output.js';
import { cardsCommand } from './index.js';

const options = {
  adapter: { argument: '<name>', parse: 'list', description: 'only this adapter' },
  module: {
    argument: '<file>',
    parse: 'list',
    description: 'cards of the `drills` exported by this file of your own; without --adapter, only it',
  },
  config: {
    argument: '<file>',
    description: 'cards of the `type: http` operations this retrysafe config declares; without --adapter, only them',
  },
  format: { argument: '<fmt>', choices: ['md', 'json'], description: 'md or json' },
  check: { description: 'fail (exit 1) when docs/cards is out of date or a card is invalid' },
  write: { description: 'regenerate docs/cards from the card objects' },
  dir: { argument: '<dir>', default: 'docs/cards', description: 'the cards folder' },
  json: { description: 'same as --format json; with --check/--write, the result as JSON' },
} as const satisfies Options;

export type CardsFlags = Parsed<typeof options>;

export const cards = defineCommand({
  name: 'cards',
  description:
    'print retry safety cards; --write regenerates docs/cards, --check fails on drift or on unknowns not listed as unverified',
  options,
  async run({ io, json, color, errColor }, o) {
    const r = await cardsCommand(o);
    const problems = () => {
      for (const p of r.problems) io.err(`${paint('red', '✗', errColor)} ${p.file}: ${p.problem}`);
    };
    if (!o.check && !o.write) {
      io.out(r.output);
      problems();
    } else if (o.json)
      json({ ok: r.ok, dir: r.dir, cards: r.cards.map((c) => c.name), written: r.written, problems: r.problems });
    else {
      for (const w of r.written) io.out(`wrote ${w}`);
      problems();
      if (o.check)
        io.out(
          r.ok
            ? `${paint('green', '✓', color)} ${r.cards.length} cards in ${r.dir} match the card objects`
            : `${r.problems.length} problem(s) with the cards in ${r.dir}`,
        );
      else if (r.written.length === 0) io.out(`${r.cards.length} cards in ${r.dir} already up to date`);
    }
    return r.ok ? EXIT.ok : EXIT.failed;
  },
});
