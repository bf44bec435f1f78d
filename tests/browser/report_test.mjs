// Opens each report.html given on the command line in Debian's headless chromium and fails unless
// the page loads without a console error, a page error or a failed request; every inlined plot
// renders (a laid-out SVG with drawn content); every link to a file of the results directory
// points at a file that exists; the plots named after "=" are among them; and a full-page
// screenshot is not blank. Writes the screenshot next to the report (report.png).
// Usage: node report_test.mjs DIR/report.html[=plot,plot...] ...
import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const executablePath = process.env.HARNESS_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(executablePath)) {
  console.error(`report_test: no browser at ${executablePath}; bash .ci/install-deps installs Debian's chromium`);
  process.exit(2);
}
const reports = process.argv.slice(2);
if (reports.length === 0) {
  console.error('usage: node report_test.mjs DIR/report.html[=plot,plot...] ...');
  process.exit(2);
}

// No network, no first-run, no background services: this machine has no internet, and a browser
// reaching out would fail (and a test that needs the network would lie about self-containment).
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
let failures = 0;
const fail = (report, what) => {
  console.error(`FAIL ${report}: ${what}`);
  failures += 1;
};

try {
  for (const argument of reports) {
    const [report, named = ''] = argument.split('=');
    const required = named.split(',').filter((name) => name !== '');
    const failuresBefore = failures;
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()}`));
    // Anything but the page itself would be a fetch the report must not need.
    const fetched = [];
    page.on('request', (request) => fetched.push(request.url()));

    const url = pathToFileURL(resolve(report)).href;
    await page.goto(url, { waitUntil: 'load' });
    for (const problem of problems) fail(report, problem);
    for (const other of fetched.filter((u) => u !== url)) fail(report, `fetched ${other}`);

    const plots = await page.$$eval('svg.plot', (svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        return { id: svg.closest('figure')?.id ?? '?', width: box.width, height: box.height,
                 drawn: svg.querySelectorAll('path, text, rect, polyline, use').length };
      }));
    if (plots.length === 0) fail(report, 'no plot');
    for (const name of required) {
      if (!plots.some((plot) => plot.id === `plot-${name}`)) fail(report, `no plot ${name}`);
    }
    for (const plot of plots) {
      if (plot.width < 300 || plot.height < 150 || plot.drawn < 20) {
        fail(report, `plot ${plot.id} did not render (${plot.width}x${plot.height}, ${plot.drawn} elements)`);
      }
    }

    const links = await page.$$eval('a[href]', (anchors) => anchors.map((a) => a.getAttribute('href')));
    for (const href of links.filter((h) => !h.startsWith('#'))) {
      if (!existsSync(resolve(dirname(report), href))) fail(report, `link to a missing file: ${href}`);
    }

    // Not blank: the share of the screenshot's pixels that are not (nearly) white, measured in the
    // browser from the PNG itself.
    const shot = await page.screenshot({ fullPage: true, path: resolve(dirname(report), 'report.png') });
    const inked = await page.evaluate(async (base64) => {
      const image = new Image();
      image.src = `data:image/png;base64,${base64}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d');
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      let inked = 0;
      for (let i = 0; i < pixels.length; i += 4) {
        if (pixels[i] < 200 || pixels[i + 1] < 200 || pixels[i + 2] < 200) inked += 1;
      }
      return inked / (pixels.length / 4);
    }, shot.toString('base64'));
    if (!(inked > 0.01)) fail(report, `the screenshot is blank (${(100 * inked).toFixed(2)}% of pixels inked)`);
    if (failures === failuresBefore) console.log(`ok ${report}: ${plots.length} plot(s), ${links.length} link(s), ${(100 * inked).toFixed(1)}% inked`);
    await page.close();
  }
} finally {
  await browser.close();
}
process.exit(failures === 0 ? 0 : 1);
