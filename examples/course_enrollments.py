"""A sparse index: registrations of a term, of which only the confirmed ones (those with an
``enrolled_on`` date) carry the GSI keys, so the index holds just the enrollments.

Run: ``python examples/course_enrollments.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import keys, run, show, table_keys

from dynaorm import GSI, Entity, Table

school = Table("dynaorm-example-courses", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Registration(Entity):
    class Meta:
        table = school
        pk = "TERM#{campus}#{year}"
        sk = "{course}#{student_id}"
        # left off the item while enrolled_on is None: that makes the index sparse
        indexes = {"gsi1": ("ENROLLED#{course}", "{enrolled_on}#{student_id}")}

    campus: str
    year: int
    course: str
    student_id: str
    created: str
    enrolled_on: str | None = None


def main() -> None:
    with run(school, "a sparse GSI holding only confirmed enrollments") as db:
        s = db.session()
        rows = [("202", 2023, "CourseA", "23552", "2020-03-23", "2020-03-23"),
                ("202", 2023, "CourseA", "48533", "2020-03-14", None),
                ("202", 2025, "CourseB", "98244", "2020-02-06", "2020-03-22"),
                ("203", 2025, "CourseB", "37134", "2020-05-04", None),
                ("203", 2025, "CourseA", "72442", "2020-01-08", "2020-02-12"),
                ("203", 2025, "CourseD", "23512", "2020-05-09", None)]
        s.save_many([Registration(campus=c, year=y, course=co, student_id=st, created=cr,
                                  enrolled_on=en) for c, y, co, st, cr, en in rows])
        items = table_keys(db, "six registrations", extra=["gsi1pk", "gsi1sk"])
        indexed = [i for i in items if "gsi1pk" in i]
        print(f"    -> {len(indexed)} of {len(items)} items are in gsi1")
        show('s.query(Registration, campus="203", year=2025)',
             s.query(Registration, campus="203", year=2025), keys)
        show('s.query(Registration, index="gsi1", course="CourseA")',
             s.query(Registration, index="gsi1", course="CourseA"), keys)
        show('s.query(Registration, index="gsi1", course="CourseB").lt(enrolled_on="2020-04")',
             s.query(Registration, index="gsi1", course="CourseB").lt(enrolled_on="2020-04"),
             keys)

        pending = s.get(Registration, campus="202", year=2023, course="CourseA",
                        student_id="48533")
        assert pending is not None
        pending.enrolled_on = "2020-04-01"
        s.save(pending)
        s.commit()
        show('# student 48533 confirms; s.query(Registration, index="gsi1", course="CourseA")',
             s.query(Registration, index="gsi1", course="CourseA"), keys)


if __name__ == "__main__":
    main()
