"""The parts of the CPU simulator's navigation grid, one concept per module, in build order:

- :mod:`.cells`: the vocabulary (agent shape, a layer of cells, a snapped location);
- :mod:`.surface`: the walkable surface: mesh sampling, floor cells, layers, patches,
  islands and the seams (portals) between patches;
- :mod:`.clearance`: erosion by the agent radius, the signed clearance and line of sight;
- :mod:`.corners`: the corner/visibility graph that shortest paths bend on;
- :mod:`.geodesics`: goal-set distance fields, look-ups from a point and paths;
- :mod:`.fastmarch`: the fast-marching fallback field;
- :mod:`.motion`: snapping onto the surface and stepping with sliding.

:class:`habitat_mosnav.sims.navgrid.NavGrid` builds them and is their query surface.
"""
