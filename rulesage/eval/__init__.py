"""Evaluation: every figure the project quotes is measured here.

- ``gold``: the one gold loader and the one matching rule (a passage supports an evidence item);
- ``runs``: `rulesage eval` and `rulesage bench` through the real mesh (per arm, fused, reranked, rulings);
- ``beir``: BEIR SciFact through the same mesh;
- ``report``: the HTML report of a gold run (`rulesage eval --report DIR`);
- ``gate``: `rulesage gate`, part of the shelf against floors, run by the test script;
- ``doorman``: the doorman's exam, scored (`rulesage doorman-exam`);
- ``figures``: the expected figures as data (figures.json), and `rulesage figures`, which writes them into
  the README, the model cards and the gate's floors.
"""
