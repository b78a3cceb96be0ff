import { ConfigError, FileLimitError, readDataFile } from '@retrysafe/config';
import { type CardProblem, CardValidationError, parseCard, validateCard } from '@retrysafe/contract';
import { defineCommand, EXIT } from '../../../command.js';
import { refusals } from '../refusals.js';

/** `retrysafe cards validate <file…>`: each JSON/YAML card file read as the runner would, with what it will refuse. */
export function validateCardFiles(files: readonly string[]) {
  return files.map((file) => {
    const failed = (problems: readonly CardProblem[], unreadable?: true) => ({
      file,
      ok: false as const,
      problems,
      unknowns: [],
      refusals: [],
      unreadable,
    });
    try {
      const card = parseCard(readDataFile(file), file);
      const { unknowns } = validateCard(card);
      return { file, ok: true as const, operation: card.operation, problems: [], unknowns, refusals: refusals(card) };
    } catch (e) {
      if (CardValidationError.isInstance(e)) return failed(e.problems);
      // exit 2, as for any unreadable file
      if (ConfigError.isInstance(e) || FileLimitError.isInstance(e))
        return failed([{ path: '(file)', message: e.message }], true);
      throw e;
    }
  });
}

export const cardsValidate = defineCommand({
  name: 'cards validate',
  description:
    'read retry safety card files (JSON or YAML) as the runner would: every problem with its field, the unknowns, and what the runner will refuse',
  arguments: [['<file...>', 'card files']],
  options: { json: { description: 'print the results as JSON' } },
  async run({ io, json }, o, [files]: [string[]]) {
    const results = validateCardFiles(files);
    if (o.json) json({ ok: results.every((r) => r.ok), results });
    else
      for (const r of results)
        if (r.ok)
          io.out(
            `✓ ${r.file}: ${r.operation} (${r.unknowns.length} unknown fact(s))${r.refusals.length ? `\n  the runner will refuse:\n${r.refusals.map((x) => `  - ${x}`).join('\n')}` : ''}`,
          );
        else
          io.err(
            `✗ ${r.file}: ${r.problems.length} problem(s)\n${r.problems.map((p) => `  - ${p.path}: ${p.message}`).join('\n')}`,
          );
    if (results.some((r) => !r.ok && r.unreadable)) return EXIT.usage;
    return results.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
  },
});
