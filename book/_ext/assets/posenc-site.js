/* Every page of the book "Positional Encoding in Transformers": the theme button as a
 * two-state switch.
 *
 * The theme's own button cycles light -> auto -> dark, and a click to "auto" changes nothing
 * a reader can see when the system is in the same mode. Here each click switches to the
 * other theme than the one shown, and remembers it the way the theme does (localStorage
 * "mode" and "theme", read by its inline script on the next page). A reader who never
 * clicks gets the system's setting (html_context default_mode "auto" in _config.yml). */
(function () {
  "use strict";

  function shown() {
    return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
  }

  function markButtons(theme) {
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      button.setAttribute("aria-pressed", String(theme === "dark"));
    });
  }

  function apply(theme) {
    var root = document.documentElement;
    root.dataset.mode = theme;
    root.dataset.theme = theme;
    document.querySelectorAll(".dropdown-menu").forEach(function (menu) {
      menu.classList.toggle("dropdown-menu-dark", theme === "dark");
    });
    try {
      localStorage.setItem("mode", theme);
      localStorage.setItem("theme", theme);
    } catch (error) { /* storage refused (private mode): the choice lasts for this page */ }
    markButtons(theme);
  }

  // Capture phase, on the document: runs before the button's own (cycling) listener, which
  // never sees the click.
  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest ? event.target.closest(".theme-switch-button") : null;
    if (!button) { return; }
    event.stopPropagation();
    event.preventDefault();
    apply(shown() === "dark" ? "light" : "dark");
  }, true);

  // A reader who chose a theme keeps it when the system's setting changes (the theme listens
  // to the system while the mode is "auto", as it is on a first visit).
  var prefersDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  if (prefersDark && prefersDark.addEventListener) {
    prefersDark.addEventListener("change", function () {
      var mode = document.documentElement.dataset.mode;
      if (mode === "light" || mode === "dark") { document.documentElement.dataset.theme = mode; }
      setTimeout(function () { markButtons(shown()); }, 0);  // after the theme's own listener
    });
  }

  // The theme sets data-theme from the mode after this script has run (its own deferred script).
  function markWhenReady() { setTimeout(function () { markButtons(shown()); }, 0); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markWhenReady);
  } else {
    markWhenReady();
  }
})();
