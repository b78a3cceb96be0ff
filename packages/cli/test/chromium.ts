import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** The machine's headless Chromium. No skip when it is missing: the launch fails and so does the suite. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync('/usr/bin/chromium'))
    throw new Error('/usr/bin/chromium is missing: apt-get install -y chromium (see .ci/run)');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
