function sortTable(table, col, numeric, desc) {
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
    if (numeric) {
      x = x === '' ? -Infinity : parseFloat(x); y = y === '' ? -Infinity : parseFloat(y);
      return desc ? y - x : x - y;
    }
    return desc ? y.localeCompare(x) : x.localeCompare(y);
  });
  rows.forEach(function (r) { body.appendChild(r); });
  table.setAttribute('data-sorted', col + (desc ? ':desc' : ':asc'));
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var desc = th.getAttribute('data-desc') !== 'true';
      th.setAttribute('data-desc', desc);
      sortTable(table, col, th.getAttribute('data-type') === 'num', desc);
    });
  });
});
// index.html#sort=COLUMN or #sort=-COLUMN sorts the episode table on load
var m = /sort=(-?)([A-Za-z_]+)/.exec(location.hash);
if (m) {
  var table = document.getElementById('episodes');
  table.querySelectorAll('th').forEach(function (th, col) {
    if (th.getAttribute('data-key') === m[2])
      sortTable(table, col, th.getAttribute('data-type') === 'num', m[1] === '-');
  });
}
