import { defineCommand, EXIT } from '../../command.js';
import { paint } from '../../output.js';
import { CARDS_OPTIONS, cardsCommand } from './index.js';

export const cards = defineCommand({
  name: 'cards',
  description:
    'print retry safety cards; --write regenerates docs/cards, --check fails on drift or on unknowns not listed as unverified',
  options: CARDS_OPTIONS,
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
