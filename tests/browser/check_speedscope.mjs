// Opens each file in speedscope's own app (the npm package, served from
// localhost: no other network) in headless Chromium and checks it imported:
// speedscope names the profile in the page's title and shows no error.
// speedscope reads its own format and Chrome's trace events alike.
//   node check_speedscope.mjs NAME=FILE [NAME=FILE...]
// NAME: what the title must hold once the file is read.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { basename, dirname, join, extname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const app = join(here, 'node_modules', 'speedscope', 'dist', 'release');
const files = process.argv.slice(2).map((a) => { const eq = a.indexOf('='); return { name: a.slice(0, eq), path: a.slice(eq + 1) }; });
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm' };
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  // /profile/I/NAME: file I, under its own name (speedscope titles a trace by it).
  const served = url.pathname.startsWith('/profile/') ? files[Number(url.pathname.split('/')[2])]?.path
                                                      : join(app, url.pathname === '/' ? 'index.html' : url.pathname);
  if (!served || !existsSync(served)) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': types[extname(served)] || 'application/octet-stream' });
  res.end(readFileSync(served));
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const port = server.address().port;
const failures = [];
const browser = await chromium.launch({
  executablePath: process.env.BACKENDLAB_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  for (let i = 0; i < files.length; ++i) {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('request', (r) => { if (!r.url().startsWith(`http://127.0.0.1:${port}/`) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) errors.push('fetched ' + r.url()); });
    const profile = `http://127.0.0.1:${port}/profile/${i}/${basename(files[i].path)}`;
    await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(profile)}`);
    try {
      await page.waitForFunction((name) => document.title.includes(name), files[i].name, { timeout: 15000 });
    } catch (e) {
      failures.push(`${files[i].path}: speedscope's title never named ${files[i].name} (it is ${JSON.stringify(await page.title())})`);
    }
    const body = await page.locator('body').innerText();
    if (/something went wrong|unrecognized format|failed to/i.test(body)) failures.push(`${files[i].path}: speedscope says: ${body.slice(0, 200)}`);
    for (const e of errors) failures.push(`${files[i].path}: ${e}`);
    console.log(JSON.stringify({ file: files[i].path, title: await page.title() }));
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
if (failures.length) {
  for (const f of failures) console.error(f);
  process.exit(1);
}
