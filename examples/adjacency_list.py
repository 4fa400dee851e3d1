"""An adjacency list (many-to-many): students and courses, with one edge item per
enrollment stored under the student and inverted through a GSI under the course.

Run: ``python examples/adjacency_list.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import keys, run, show

from dynaorm import GSI, Entity, Table

campus = Table("dynaorm-example-adjacency", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Student(Entity):
    class Meta:
        table = campus
        pk = "STUDENT#{student_id}"
        sk = "STUDENT#{student_id}"

    student_id: str
    name: str


class Course(Entity):
    class Meta:
        table = campus
        pk = "COURSE#{course_id}"
        sk = "COURSE#{course_id}"
        indexes = {"gsi1": ("COURSE#{course_id}", "COURSE#{course_id}")}

    course_id: str
    title: str


class Enrollment(Entity):
    """The edge: pk = the student, sk = the course; gsi1 swaps them."""

    class Meta:
        table = campus
        pk = "STUDENT#{student_id}"
        sk = "COURSE#{course_id}"
        indexes = {"gsi1": ("COURSE#{course_id}", "STUDENT#{student_id}")}

    student_id: str
    course_id: str
    grade: str | None = None


def main() -> None:
    with run(campus, "many-to-many enrollments read from both sides") as db:
        s = db.session()
        s.save_many([Student(student_id="s1", name="Ana"), Student(student_id="s2", name="Ben"),
                     Student(student_id="s3", name="Cai"),
                     Course(course_id="math", title="Algebra"),
                     Course(course_id="bio", title="Biology")])
        edges = [("s1", "math", "A"), ("s1", "bio", None), ("s2", "math", "B"),
                 ("s3", "bio", "A")]
        s.save_many([Enrollment(student_id=a, course_id=b, grade=g) for a, b, g in edges])

        show('s.query(Enrollment, student_id="s1")  # the courses of a student',
             s.query(Enrollment, student_id="s1"), keys)
        show('s.query(Enrollment, index="gsi1", course_id="math")  # the students of a course',
             s.query(Enrollment, index="gsi1", course_id="math"), keys)
        show('s.query(Student, Enrollment, student_id="s1")  # student item and its edges',
             s.query(Student, Enrollment, student_id="s1"), keys)
        show('s.query(Course, Enrollment, index="gsi1", course_id="bio")  # course + edges',
             s.query(Course, Enrollment, index="gsi1", course_id="bio"), keys)
        edges_math = s.query(Enrollment, index="gsi1", course_id="math").all()
        names = s.get_many(Student, [{"student_id": e.student_id} for e in edges_math])
        show('s.get_many(Student, [...])  # resolve the edges of "math"', names,
             lambda x: keys(x) if x else "None")


if __name__ == "__main__":
    main()
