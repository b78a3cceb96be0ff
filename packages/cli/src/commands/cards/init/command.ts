import { defineCommand, EXIT } from '../../../command.js';
import { CARDS_INIT_OPTIONS, cardsInit } from './index.js';

export const cardsInitCommand = defineCommand({
  name: 'cards init',
  description:
    'fill a new retry safety card field by field (asks, or --from a partial JSON/YAML card); what it cannot fill stays unknown, and it shows what the runner will refuse because of that',
  options: CARDS_INIT_OPTIONS,
  async run({ io, json }, o) {
    const r = await cardsInit(o);
    if (o.json) {
      const { text: _text, ...result } = r; // the card is in `card`
      json({ ok: true, ...result });
      return EXIT.ok;
    }
    if (!r.written) io.out(r.text);
    const report = [
      r.written ? `wrote ${r.written}` : '',
      `${r.unknowns.length} fact(s) left unknown${r.unknowns.length ? `: ${r.unknowns.join(', ')}` : ''} (listed in unverified[])`,
      r.defaulted.length ? `${r.defaulted.length} field(s) took retrysafe's defaults: ${r.defaulted.join(', ')}` : '',
      r.refusals.length
        ? `Because of that, the runner will refuse:\n${r.refusals.map((x) => `  - ${x}`).join('\n')}`
        : 'The runner relies on nothing unknown in this card.',
    ]
      .filter(Boolean)
      .join('\n');
    (r.written ? io.out : io.err)(report);
    return EXIT.ok;
  },
});
