"""What the HTML reports share (the reproduction and the validation reports): their style
sheet, and a script that marks the page when an image fails to load (checked in headless
Chromium by the tests)."""

SCRIPT = """
window.addEventListener("load", function () {
  var broken = [];
  var images = document.querySelectorAll("img");
  for (var i = 0; i < images.length; i++) {
    if (!images[i].complete || images[i].naturalWidth === 0) {
      broken.push(images[i].getAttribute("src"));
    }
  }
  document.body.setAttribute("data-plots", broken.length ? "broken: " + broken.join(", ") : "ok");
  document.body.setAttribute("data-images", String(images.length));
  if (broken.length) {
    var banner = document.createElement("p");
    banner.className = "banner";
    banner.textContent = broken.length + " plot(s) did not load: " + broken.join(", ");
    document.body.insertBefore(banner, document.body.firstChild);
  }
});
"""

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1300px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
td.num { text-align: right; white-space: nowrap; }
tr.differs td.ratio { background: #fde8e8; }
img { max-width: 640px; margin: 0.5em 1em 0.5em 0; border: 1px solid #eee; }
.banner { background: #fde8e8; padding: 0.5em; }
.note { color: #555; }
"""
