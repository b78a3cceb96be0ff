import { defineCommand, EXIT } from '../../command.js';
import { UsageError } from '../../errors.js';
import { TOPICS, topicText } from './index.js';

export const help = defineCommand({
  name: 'help',
  description: `help for a command (retrysafe help ledger resolve), or a topic: ${Object.keys(TOPICS).join(', ')}`,
  arguments: [['[command...]', 'a command, or a topic']],
  async run({ io, help: showHelp }, _o, [words]: [string[]]) {
    if (words.length === 1 && TOPICS[words[0]!]) {
      io.out(topicText(words[0]!));
      return EXIT.ok;
    }
    if (!showHelp(words))
      throw new UsageError(`no command or topic '${words.join(' ')}' (topics: ${Object.keys(TOPICS).join(', ')})`);
    return EXIT.ok;
  },
});
