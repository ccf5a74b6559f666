// Opens one of backendlab's HTML pages (or one of its SVG flame graphs) in
// headless Chromium (Debian's, driven by Playwright) and checks what a
// reader sees: the page renders with no console error and fetches
// nothing, its table has a row per row of the run's JSON, and in each
// flame graph a search highlights frames and a click zooms; the phase
// timeline, where there is one, shows its first processes, then all.
//   node check_page.mjs PAGE.html RUN.json SEARCH [SCREENSHOT.png]
//   node check_page.mjs GRAPH.svg - SEARCH      (a flame graph alone: no table)
// Prints one JSON line of what it measured; exits 1 naming each failure.
import { chromium } from 'playwright-core';
import { readFileSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [page_path, json_path, search, screenshot] = process.argv.slice(2);
const failures = [];
const expected_rows = json_path === '-' ? 0 : JSON.parse(readFileSync(json_path, 'utf8')).rows.length;
const browser = await chromium.launch({
  executablePath: process.env.BACKENDLAB_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  // Nothing may be fetched: every request but the page itself is a failure.
  const url = pathToFileURL(page_path).href;
  page.on('request', (r) => { if (r.url() !== url && !r.url().startsWith('data:')) errors.push('fetched ' + r.url()); });
  const started = Date.now();
  await page.goto(url, { waitUntil: 'load' });
  if (json_path !== '-') await page.waitForSelector('body[data-ready="yes"]', { timeout: 10000 });
  const interactive_ms = Date.now() - started;
  const rows = json_path === '-' ? 0 : await page.locator('#rows tbody tr').count();
  if (rows !== expected_rows) failures.push(`the table has ${rows} rows, the JSON ${expected_rows}`);
  const graphs = await page.evaluate(() => document.querySelectorAll('svg.flame').length);
  if (json_path === '-' && graphs !== 1) failures.push(`${page_path}: not one flame graph but ${graphs}`);
  const matched = [];
  for (let i = 0; i < graphs; ++i) {
    const result = await page.evaluate(([i, term]) => {
      const svg = document.querySelectorAll('svg.flame')[i];
      const n = svg.flameSearch(term);
      const lit = Array.from(svg.querySelectorAll('g.f rect')).filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length;
      const text = svg.querySelector('.matched').textContent;
      // A click on a frame zooms: the Reset Zoom control shows. A graph with
      // no frame to click (none above "all") fails: its zoom is unchecked.
      const frame = svg.querySelector('g.f[data-l="1"]');
      if (frame) frame.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      const zoomed = frame !== null && svg.querySelector('.unzoom').style.display !== 'none';
      svg.flameReset();
      svg.flameClear();
      return { n, lit, text, clickable: frame !== null, zoomed };
    }, [i, search]);
    matched.push(result.n);
    if (result.n < 1 || result.lit < 1) failures.push(`flame graph ${i}: a search for ${search} highlighted nothing`);
    if (!result.text.startsWith('Matched: ')) failures.push(`flame graph ${i}: no "Matched" line (${result.text})`);
    if (!result.clickable) failures.push(`flame graph ${i}: no frame to click (none at level 1), so no zoom was checked`);
    else if (!result.zoomed) failures.push(`flame graph ${i}: a click did not zoom`);
  }
  // The phase timeline: the first 10 processes at first; its last control
  // shows all of them, one track each (a bar per phase span).
  const timeline = await page.evaluate(() => {
    const host = document.getElementById('timeline');
    const svg = host && host.querySelector('svg');
    if (!svg) return { first: 0, all: 0, bars: 0 };
    const first = svg.querySelectorAll('text.track').length;
    const links = host.querySelectorAll('a');
    links[links.length - 1].dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true }));
    const all = host.querySelector('svg');
    return { first, all: all.querySelectorAll('text.track').length, bars: all.querySelectorAll('rect.span').length };
  });
  if (timeline.all > 0 && (timeline.first < 1 || timeline.first > 10)) failures.push(`the timeline shows ${timeline.first} processes at first, not 1 to 10`);
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: false });
  for (const e of errors) failures.push('console: ' + e);
  console.log(JSON.stringify({ rows, expected_rows, graphs, matched, timeline: timeline.all, timeline_bars: timeline.bars, interactive_ms,
                               bytes: statSync(page_path).size }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(f);
  process.exit(1);
}
