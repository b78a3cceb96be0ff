import type { CommandConfig } from './command.js';
import { cards } from './commands/cards/index.js';
import { cardsInitCommand } from './commands/cards/init/index.js';
import { cardsValidate } from './commands/cards/validate/index.js';
import { demo } from './commands/demo/index.js';
import { drill } from './commands/drill/index.js';
import { help } from './commands/help/index.js';
import { ledgerExportCommand } from './commands/ledger/export/index.js';
import { ledgerHandoffsCommand } from './commands/ledger/handoffs/index.js';
import { ledgerLsCommand } from './commands/ledger/ls/index.js';
import { ledgerPruneCommand } from './commands/ledger/prune/index.js';
import { ledgerResolveCommand } from './commands/ledger/resolve/index.js';
import { ledgerResolveAllCommand } from './commands/ledger/resolve-all/index.js';
import { ledgerShowCommand } from './commands/ledger/show/index.js';
import { ledgerVerifyCommand } from './commands/ledger/verify/index.js';
import { probe } from './commands/probe/index.js';

/** Every command, in the order `--help` lists them; a group comes before the commands it holds. */
export const COMMANDS: readonly CommandConfig[] = [
  drill,
  cards,
  cardsInitCommand,
  cardsValidate,
  // a group: its commands are the folders in commands/ledger/
  { name: 'ledger', description: 'inspect the ledger and resolve handoffs (SQLite file or postgres:// URL)' },
  ledgerLsCommand,
  ledgerShowCommand,
  ledgerVerifyCommand,
  ledgerExportCommand,
  ledgerPruneCommand,
  ledgerHandoffsCommand,
  ledgerResolveCommand,
  ledgerResolveAllCommand,
  probe,
  demo,
  help,
];

export const DESCRIPTION =
  'Perform state-changing operations at most once: drill the adapters, read their cards, inspect the ledger and resolve handoffs.';

export const HELP_AFTER = `
Exit codes: 0 ok · 1 a drill, check or step failed · 2 bad usage (or a file that cannot be read or written) · 3 probe saw no effect · 130 stopped by Ctrl-C.
Colour only on a terminal and never with NO_COLOR set. Every command takes --json.

Start with:  retrysafe demo     (a scripted agent flow on a SQLite ledger)
             retrysafe drill    (every adapter through lost responses, races and errors)
Handoffs:    retrysafe help runbook`;
