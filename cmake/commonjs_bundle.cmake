# Makes one browser script of Debian's node-xterm (xterm.js 3.8, CommonJS
# modules under /usr/share/nodejs/xterm/lib): each module becomes a function
# in a table that a 20-line require() resolves, and the script sets
# window.Terminal with the fit addon applied. Debian's libjs-xterm ships only
# a stub that require()s those same modules, so this is the browser build.
# Run as: cmake -DLIB=<lib dir> -DOUT=<file> -P commonjs_bundle.cmake
cmake_policy(SET CMP0009 NEW)
file(GLOB_RECURSE modules FOLLOW_SYMLINKS RELATIVE ${LIB} ${LIB}/*.js)  # lib/addons is a link
list(SORT modules)
set(body "")
foreach(m ${modules})
  if(m MATCHES "\\.test\\.js$" OR (m MATCHES "^addons/" AND NOT m MATCHES "^addons/fit/fit\\.js$"))
    continue()
  endif()
  string(REGEX REPLACE "\\.js$" "" id "${m}")
  file(READ ${LIB}/${m} text)
  string(APPEND body "defs['${id}'] = function (require, module, exports) {\n${text}\n};\n")
endforeach()
file(WRITE ${OUT} "/* xterm.js 3.8 from Debian's node-xterm, bundled at build time (cmake/commonjs_bundle.cmake). MIT licensed: /usr/share/doc/libjs-xterm/copyright */
(function () {
var defs = {}, cache = {};
function resolve(from, path) {
  var parts = from.split('/');
  parts.pop();
  path.split('/').forEach(function (p) {
    if (p === '..') parts.pop(); else if (p !== '.' && p !== '') parts.push(p);
  });
  return parts.join('/');
}
function load(id) {
  if (cache[id]) return cache[id].exports;
  if (!defs[id] && defs[id + '/index']) id = id + '/index';
  if (!defs[id]) throw new Error('xterm bundle: no module ' + id);
  var module = { exports: {} };
  cache[id] = module;
  defs[id].call(module.exports, function (p) { return load(resolve(id, p)); }, module, module.exports);
  return module.exports;
}
${body}
window.Terminal = load('public/Terminal').Terminal;
window.Terminal.applyAddon(load('addons/fit/fit'));
})();
")
