// Opens the monitoring page of a running pipeline in headless Chromium (Debian's, driven by
// playwright-core), waits until the rates chart shows at least `want` batches, fails on any
// console error or page error, and saves a screenshot.
//
//   node live_page.mjs <url> <screenshot.png> <want>
// Environment: TRIBUTARY_CHROMIUM (the browser), NODE_PATH (where playwright-core is).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const [url, shot, wantText] = process.argv.slice(2);
const want = Number(wantText || 3);

const browser = await chromium.launch({
  executablePath: process.env.TRIBUTARY_CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-proxy-server"],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(
    (n) => Number(document.querySelector("#rates svg").dataset.points || 0) >= n
      && document.querySelectorAll("#batches tr").length >= n,
    want,
    { timeout: 60000 },
  );
  const points = await page.evaluate(() => Number(document.querySelector("#rates svg").dataset.points));
  const rows = await page.evaluate(() => document.querySelectorAll("#batches tr").length);
  const state = await page.evaluate(() => document.querySelector("#status b").textContent);
  await page.screenshot({ path: shot, fullPage: true });
  console.log(JSON.stringify({ points, rows, state, errors }));
} finally {
  await browser.close();
}
if (errors.length) {
  console.error(errors.join("\n"));
  process.exit(1);
}
